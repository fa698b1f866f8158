// The run viewer page: curves from metrics.jsonl, eval episodes from trajectories/, config and
// summary; everything re-read every few seconds so a run in progress stays current.
"use strict";
const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, text) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};
// The first view's data comes inline with the page (#preload): it draws without a fetch.
const PRELOAD = (() => { const p = document.getElementById("preload"); return p ? JSON.parse(p.textContent) : {}; })();
const getJSON = async (url) => {
  if (url in PRELOAD) { const data = PRELOAD[url]; delete PRELOAD[url]; return data; }
  const r = await fetch(url); if (!r.ok) throw new Error(url + ": " + r.status); return r.json();
};
const state = { runs: [], info: [], metrics: [], episodes: [], signature: "", opened: null };
const NOT_CURVES = new Set(["kind", "step", "time_s", "episodes", "wall_s", "hands", "games"]);
// Training charts: [title, row kind, key]; keys a run lacks are left out.
const TRAIN = [
  ["train reward", "train", "reward"], ["entropy", "train", "entropy"], ["step time (s)", "train", "step_time"],
  ["staleness (optimizer steps)", "rollout", "staleness"], ["rollout reward", "rollout", "reward_mean"],
  ["episodes per second", "rollout", "episodes_per_s"], ["loss", "train", "loss"],
];
const PER_ENV = /^env\/(.+)\/(reward_mean|reward)$/; // per-env rollout keys, one series each

async function load() {
  state.runs = await getJSON("/api/runs");
  const [info, metrics, episodes] = await Promise.all([
    Promise.all(state.runs.map((r) => getJSON(`/api/runs/${r.id}`))),
    Promise.all(state.runs.map((r) => getJSON(`/api/runs/${r.id}/metrics`))),
    Promise.all(state.runs.map((r) => getJSON(`/api/runs/${r.id}/episodes`))),
  ]);
  const signature = JSON.stringify([metrics.map((m) => m.length), episodes.map((e) => e.length), info.map((i) => !!i.summary)]);
  if (signature === state.signature) return;
  Object.assign(state, { info, metrics, episodes, signature });
  $("runs").textContent = state.runs.map((r) => r.path).join(" · ");
  $("updated").textContent = "updated " + new Date().toLocaleTimeString();
  drawCurves(); fillFilters(); drawEpisodes(); drawRunInfo();
}

function series(runIndex, kind, key) {
  return state.metrics[runIndex].filter((r) => r.kind === kind && typeof r[key] === "number").map((r) => [r.step, r[key]]);
}
const runLabel = (i, what) => (state.runs.length > 1 ? `${state.runs[i].name}: ${what}` : what);

function drawCurves() {
  const evalBox = $("eval-charts"), trainBox = $("train-charts");
  evalBox.replaceChildren(); trainBox.replaceChildren();
  const evalKeys = new Set();
  state.metrics.forEach((rows) => rows.filter((r) => r.kind === "eval").forEach((r) =>
    Object.entries(r).forEach(([k, v]) => { if (typeof v === "number" && !NOT_CURVES.has(k)) evalKeys.add(k); })));
  for (const key of evalKeys) {
    const lines = [];
    state.runs.forEach((run, i) => {
      lines.push({ label: runLabel(i, "model"), points: series(i, "eval", key) });
      const baselines = state.info[i].baselines || (state.info[i].summary || {}).validation_baselines || {};
      const xs = lines[lines.length - 1].points.map((p) => p[0]);
      for (const [name, m] of Object.entries(baselines)) {
        if (typeof m[key] !== "number" || !xs.length) continue;
        lines.push({ label: runLabel(i, name), points: [[Math.min(...xs), m[key]], [Math.max(...xs), m[key]]], dashed: true });
      }
    });
    LineChart.draw(evalBox, key, lines);
  }
  if (!evalKeys.size) evalBox.append(el("p", { class: "muted" }, "No periodic eval yet."));
  for (const [title, kind, key] of TRAIN) {
    const lines = state.runs.map((run, i) => ({ label: runLabel(i, key), points: series(i, kind, key) })).filter((s) => s.points.length);
    if (lines.length) LineChart.draw(trainBox, title, lines);
  }
  const envLines = [];
  state.metrics.forEach((rows, i) => {
    const keys = new Set(rows.flatMap((r) => Object.keys(r)).filter((k) => PER_ENV.test(k)));
    for (const k of keys) envLines.push({ label: runLabel(i, k.match(PER_ENV)[1]), points: series(i, "rollout", k) });
  });
  if (envLines.length) LineChart.draw(trainBox, "rollout reward per env", envLines);
}

// ---- episodes
const allEpisodes = () => state.episodes.flatMap((eps, i) => eps.map((e) => ({ ...e, run: i })));
// A self-play episode (one game, every seat played by the policy) names each turn's seat and
// carries every seat's rewards; a single-agent one has neither.
const seated = (t) => t.seat !== undefined && t.seat !== null;
const seatLabel = (t, what) => (seated(t) ? `seat ${t.seat}${what ? ": " + what : ""}` : what);
const modelText = (e) => e.turns.filter((t) => t.role === "model").map((t) => seatLabel(t, t.text.trim())).join(" | ");
const seatRewards = (e) => e.rewards.map((r, s) => `seat ${s}: ${r}`).join(" · ");
const rewardText = (e) => (Array.isArray(e.rewards) ? seatRewards(e) : e.reward === null || e.reward === undefined ? "–" : String(e.reward));
const promptText = (e) => (e.turns.find((t) => t.role === "prompt") || { text: "" }).text;

function fillSelect(sel, values, labels = values, any = "any") {
  const keep = sel.value;
  sel.replaceChildren(el("option", { value: "" }, any), ...values.map((v, i) => el("option", { value: String(v) }, String(labels[i]))));
  if ([...sel.options].some((o) => o.value === keep)) sel.value = keep;
}
function fillFilters() {
  const eps = allEpisodes();
  fillSelect($("f-run"), state.runs.map((r) => r.id), state.runs.map((r) => r.name));
  fillSelect($("f-step"), [...new Set(eps.map((e) => e.step))].sort((a, b) => a - b));
  fillSelect($("f-env"), [...new Set(eps.map((e) => e.env || ""))].filter(Boolean));
}

function filtered() {
  const run = $("f-run").value, step = $("f-step").value, env = $("f-env").value, reward = $("f-reward").value;
  const text = $("f-text").value.trim().toLowerCase();
  return allEpisodes().filter((e) => {
    if (run !== "" && e.run !== Number(run)) return false;
    if (step !== "" && e.step !== Number(step)) return false;
    if (env !== "" && e.env !== env) return false;
    const rs = Array.isArray(e.rewards) ? e.rewards : [e.reward]; // self-play: any seat's
    if (reward === "pos" && !rs.some((r) => r > 0)) return false;
    if (reward === "zero" && !rs.some((r) => r === 0)) return false;
    if (reward === "neg" && !rs.some((r) => r < 0)) return false;
    if (text && !e.turns.some((t) => t.text.toLowerCase().includes(text))) return false;
    return true;
  });
}

function drawEpisodes() {
  const rows = filtered();
  const body = $("episodes").tBodies[0];
  body.replaceChildren();
  for (const e of rows.slice(0, 500)) {
    const tr = el("tr", { "data-run": e.run, "data-step": e.step, "data-task": e.task });
    const reward = rewardText(e);
    tr.append(el("td", {}, state.runs[e.run].name), el("td", {}, String(e.step)), el("td", {}, String(e.task)),
      el("td", {}, e.env || ""), el("td", { class: Array.isArray(e.rewards) ? "seats" : e.reward > 0 ? "good" : e.reward < 0 ? "bad" : "" }, reward),
      el("td", {}, String(e.num_turns)), el("td", { class: "text" }, promptText(e)), el("td", { class: "text" }, modelText(e)));
    tr.onclick = () => openEpisode(e);
    body.append(tr);
  }
  $("f-count").textContent = `${rows.length} episodes` + (rows.length > 500 ? " (first 500 shown)" : "");
}

function renderEpisode(box, e, title) {
  box.replaceChildren(el("h3", {}, title));
  if (!e) { box.append(el("p", { class: "muted" }, "This task was not sampled there.")); return; }
  const seats = Array.isArray(e.rewards);
  box.append(el("p", {}, `${seats ? "returns " + seatRewards(e) : "reward " + (e.reward ?? "–")} · stop ${e.stop} · ${e.num_turns} model turns`));
  for (const t of e.turns) {
    const div = el("div", seated(t) ? { class: `turn ${t.role} seat seat-${t.seat % 4}`, "data-seat": t.seat } : { class: "turn " + t.role });
    div.append(el("div", { class: "role" }, seatLabel(t, t.role === "model" ? "model answer" : t.role === "env" ? "env" : "prompt")));
    if (t.role === "model" && t.tokens) {
      const line = el("div");
      t.tokens.forEach((tok, i) => {
        const lp = t.logprobs[i], p = Math.exp(lp);
        const span = el("span", { class: "tok", title: `logprob ${lp} (p ${p.toFixed(3)})` }, tok);
        span.style.background = `rgba(47,111,219,${(0.08 + 0.5 * p).toFixed(2)})`;
        line.append(span);
      });
      div.append(line, el("div", { class: "muted" }, "logprobs " + t.logprobs.map((x) => x.toFixed(3)).join(", ")));
    } else div.append(el("pre", {}, t.text));
    box.append(div);
  }
  if (seats) {  // each seat's return at the end of the game
    const end = el("div", { class: "returns" }, "returns ");
    e.rewards.forEach((r, s) => end.append(el("span", { class: `seat seat-${s % 4}`, "data-seat": s }, `seat ${s}: ${r}`)));
    box.append(end);
  }
}

function openEpisode(e) {
  state.opened = e;
  $("episode-section").hidden = false;
  $("episode-title").textContent = `${state.runs[e.run].name}, step ${e.step}, task ${e.task}`;
  const options = [];
  const steps = [...new Set(state.episodes[e.run].map((x) => x.step))].sort((a, b) => a - b);
  for (const s of steps) if (s !== e.step) options.push([`${e.run}:${s}`, `step ${s} (this run)`]);
  state.runs.forEach((r, i) => { if (i !== e.run) for (const s of [...new Set(state.episodes[i].map((x) => x.step))]) options.push([`${i}:${s}`, `${r.name}, step ${s}`]); });
  const sel = $("compare");
  sel.replaceChildren(el("option", { value: "" }, "(nothing)"), ...options.map(([v, l]) => el("option", { value: v }, l)));
  sel.onchange = () => drawCompare();
  renderEpisode($("episode"), e, `step ${e.step}`);
  $("episode-other").replaceChildren();
  $("episode-section").scrollIntoView({ block: "nearest" });
}

function drawCompare() {
  const e = state.opened, v = $("compare").value;
  if (!e || !v) { $("episode-other").replaceChildren(); return; }
  const [run, step] = v.split(":").map(Number);
  const other = state.episodes[run].find((x) => x.step === step && x.task === e.task);
  renderEpisode($("episode-other"), other, `${state.runs[run].name}, step ${step}`);
}

function drawRunInfo() {
  const box = $("run-info");
  box.replaceChildren();
  state.info.forEach((info) => {
    const s = el("section");
    s.append(el("h2", {}, info.name), el("label", {}, "resume this run"), el("pre", { class: "resume" }, info.resume));
    if (info.summary) s.append(el("label", {}, "summary.json"), el("pre", {}, JSON.stringify(info.summary, null, 2)));
    else s.append(el("p", { class: "muted" }, "No summary.json yet: the run is training (or ended before writing it)."));
    s.append(el("label", {}, "config.json"), el("pre", {}, JSON.stringify(info.config, null, 2)));
    box.append(s);
  });
}

let liveTimer = null;
const livePrev = new Map();  // "url|env" -> {at, steps, count, sum}: rates between two reads

function liveRow(attrs, ...cells) { const r = el("tr", attrs); r.append(...cells); return r; }

function cell(v, digits = 0) {
  return el("td", {}, v === null || v === undefined ? "–" : typeof v === "number" ? v.toFixed(digits) : String(v));
}

async function loadLive() {
  const rows = await (await fetch("/api/live")).json();
  $("live-none").hidden = rows.length > 0;
  const servers = [], trainers = [];
  const now = performance.now();
  for (const r of rows) {
    if (r.error) { servers.push(liveRow({}, cell(r.url), el("td", { colspan: "9", class: "error" }, r.error))); continue; }
    for (const [env, f] of Object.entries(r.envs)) {
      const key = r.url + "|" + env, prev = livePrev.get(key);
      let rate = null, mean = f.step_count ? (1000 * f.step_seconds) / f.step_count : null;
      if (prev) {
        const dt = (now - prev.at) / 1000, dn = f.step_count - prev.count;
        rate = dt > 0 ? (f.steps - prev.steps) / dt : null;
        mean = dn > 0 ? (1000 * (f.step_seconds - prev.sum)) / dn : mean;
      }
      livePrev.set(key, { at: now, steps: f.steps, count: f.step_count, sum: f.step_seconds });
      servers.push(liveRow({ "data-env": env }, cell(r.url), cell(env), cell(`${f.sessions_open} / ${f.sessions_max}`),
        cell(f.steps), cell(rate, 1), cell(mean, 2), cell(f.step_p99_ms, 2), cell(f.errors), cell(f.refused), cell(f.reaped)));
    }
    const t = r.trainer;
    if (t && Object.keys(t).length) {
      trainers.push(liveRow({}, cell(r.url), cell(t.step), cell(t.episodes_total), cell(t.turns_total),
        cell(t.tokens_per_second, 1), cell(t.mean_batch_size, 1), cell(t.infra_errors_total), cell(t.groups_dropped_total)));
    }
  }
  $("live-servers").tBodies[0].replaceChildren(...servers);
  $("live-trainer").tBodies[0].replaceChildren(...trainers);
}

function showTab(name) {
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("secondary", b.dataset.tab !== name);
  for (const t of ["curves", "episodes", "run", "live"]) $("tab-" + t).hidden = t !== name;
  clearInterval(liveTimer);
  liveTimer = null;
  if (name === "live") {
    loadLive().catch(() => {});
    liveTimer = setInterval(() => loadLive().catch(() => {}), 2000);
  }
}

document.querySelectorAll(".tab").forEach((b) => { b.onclick = () => showTab(b.dataset.tab); });
["f-run", "f-step", "f-env", "f-reward"].forEach((id) => { $(id).onchange = drawEpisodes; });
$("f-text").oninput = drawEpisodes;
load().catch((e) => { $("updated").textContent = "error: " + e.message; });
setInterval(() => load().catch(() => {}), 5000);
