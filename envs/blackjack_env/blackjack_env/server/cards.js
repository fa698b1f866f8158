// BlackJack observations drawn as cards on the env playground page (openenv-train serve ... /web).
OpenEnvPlayground.registerRenderer((obs) => {
  const suits = { H: ["♥", "#c62828"], D: ["♦", "#c62828"], S: ["♠", "#1d2433"], C: ["♣", "#1d2433"] };
  const card = (c) => {
    const [mark, colour] = suits[c.slice(-1)] || ["", "#1d2433"];
    return `<span class="card" style="display:inline-block;width:42px;height:60px;margin:2px;border:1px solid #98a2b3;` +
      `border-radius:6px;background:#fff;color:${colour};font:600 18px/60px system-ui;text-align:center">` +
      `${c.slice(0, -1)}${mark}</span>`;
  };
  const hidden = `<span class="card" style="display:inline-block;width:42px;height:60px;margin:2px;border-radius:6px;` +
    `background:repeating-linear-gradient(45deg,#2f6fdb,#2f6fdb 5px,#5b8de6 5px,#5b8de6 10px)"></span>`;
  const dealer = obs.dealer_cards && obs.dealer_cards.length
    ? obs.dealer_cards.map(card).join("")
    : `<span class="card" style="display:inline-block;width:42px;height:60px;margin:2px;border:1px solid #98a2b3;` +
      `border-radius:6px;background:#fff;font:600 18px/60px system-ui;text-align:center">${obs.dealer_upcard || "?"}</span>` + hidden;
  return `<div class="blackjack"><div>dealer</div><div id="dealer-cards">${dealer}</div>` +
    `<div>player · ${obs.player_total}${obs.soft ? " soft" : ""}</div>` +
    `<div id="player-cards">${(obs.player_cards || []).map(card).join("")}</div></div>`;
});
