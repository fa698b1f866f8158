"""OpenSpiel ``blackjack`` rules as pure Python (no I/O), shared by the env server and fast evaluators.

One 52-card deck shuffled per game, dealt without replacement. Actions: HIT=0, STAND=1. The dealer
hits on 16 or less and stands on every 17 (soft 17 too). A bust player loses at once and the dealer
does not play. Returns: +1 win, 0 push, -1 loss. Deal order (as OpenSpiel 2.0.2, checked against
``pyspiel``): player, player, dealer hole (hidden), dealer up (visible); later cards come off the
same deck in order, so the same card sequence gives the same game in both.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

HIT, STAND = 0, 1
ACTION_NAMES = {HIT: "hit", STAND: "stand"}
RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K")
SUITS = ("C", "D", "H", "S")
#: Cards are rank + suit ("QH"); index ``i`` here is OpenSpiel's card/chance action ``i``
#: (OpenSpiel prints it suit first: "HQ").
FULL_DECK = tuple(r + s for s in SUITS for r in RANKS)
_CARD_SET = frozenset(FULL_DECK)


def card_value(card: str) -> int:
    """Aces count 1 here; :func:`hand_total` upgrades one ace to 11 when that does not bust."""
    rank = card[0]
    if rank == "A":
        return 1
    if rank in "TJQK":
        return 10
    return int(rank)


def hand_total(cards: list[str]) -> tuple[int, bool]:
    """Best total and whether it is soft (an ace counted as 11)."""
    total = sum(card_value(c) for c in cards)
    if any(c[0] == "A" for c in cards) and total + 10 <= 21:
        return total + 10, True
    return total, False


def rank_label(card: str) -> str:
    """Dealer up-card label used in prompts: ``A``, ``2``..``9``, ``10`` for any ten-value card."""
    rank = card[0]
    return "10" if rank in "TJQK" else rank


@dataclass
class BlackjackGame:
    """One game. ``rng`` picks every card, so a seed reproduces the whole game.

    Cards are drawn lazily, each uniformly from the cards left (a Fisher-Yates step per draw):
    the same distribution as shuffling the whole deck first, at a fraction of the cost, since a
    game uses ~6 of 52 cards and env servers deal thousands of games per second.
    """

    rng: random.Random | None
    deck: list[str] = field(default_factory=list)
    player: list[str] = field(default_factory=list)
    dealer: list[str] = field(default_factory=list)
    done: bool = False
    reward: float = 0.0

    @classmethod
    def deal(cls, seed: int | None = None, rng: random.Random | None = None) -> BlackjackGame:
        game = cls(rng=rng or random.Random(seed))
        game.deck = list(FULL_DECK)
        game._initial_deal()
        return game

    @classmethod
    def from_cards(cls, cards: list[str]) -> BlackjackGame:
        """A game whose cards come off ``cards`` in this order (tests replay OpenSpiel deals)."""
        unknown = [c for c in cards if c not in _CARD_SET]
        if unknown or len(set(cards)) != len(cards) or len(cards) < 4:
            raise ValueError(
                f"cards must be >= 4 distinct cards like 'QH' or '9C' (rank then suit), got {cards!r}"
            )
        game = cls(rng=None)  # no rng: cards come off the end of ``deck`` in order
        game.deck = list(reversed(cards))
        game._initial_deal()
        return game

    def _initial_deal(self) -> None:
        first, second, hole, up = self._draw(), self._draw(), self._draw(), self._draw()
        self.player.extend((first, second))
        self.dealer.extend((up, hole))  # dealer[0] is always the visible up card

    def _draw(self) -> str:
        deck = self.deck
        if self.rng is not None:
            i = self.rng.randrange(len(deck))
            deck[i], deck[-1] = deck[-1], deck[i]
        return deck.pop()

    @property
    def player_total(self) -> int:
        return hand_total(self.player)[0]

    @property
    def player_soft(self) -> bool:
        return hand_total(self.player)[1]

    @property
    def dealer_upcard(self) -> str:
        return self.dealer[0]

    def legal_actions(self) -> list[int]:
        return [] if self.done else [HIT, STAND]

    def apply(self, action: int) -> None:
        if self.done:
            raise ValueError("the game is over; reset to deal a new one")
        if action not in (HIT, STAND):
            raise ValueError(f"action must be {HIT} (hit) or {STAND} (stand), got {action!r}")
        if action == HIT:
            self.player.append(self._draw())
            if self.player_total > 21:
                self._finish(-1.0)
            return
        self._play_dealer()

    def _play_dealer(self) -> None:
        while hand_total(self.dealer)[0] < 17:
            self.dealer.append(self._draw())
        dealer_total = hand_total(self.dealer)[0]
        player_total = self.player_total
        if dealer_total > 21 or player_total > dealer_total:
            self._finish(1.0)
        elif player_total == dealer_total:
            self._finish(0.0)
        else:
            self._finish(-1.0)

    def _finish(self, reward: float) -> None:
        self.done = True
        self.reward = reward

    def prompt_text(self) -> str:
        """Compact rendering for LLM prompts: ``player 15 soft dealer A``."""
        total, soft = hand_total(self.player)
        return render_state(total, soft, rank_label(self.dealer_upcard))


def render_state(total: int, soft: bool, dealer_label: str) -> str:
    """``player 15 soft dealer A``: the one text form of a decision point (see prompt_text)."""
    return f"player {total} {'soft' if soft else 'hard'} dealer {dealer_label}"


def basic_strategy(total: int, soft: bool, dealer_up: str) -> int:
    """Hit/stand basic strategy (no doubling or splitting) for a 1-deck, S17 game."""
    up = (
        10
        if dealer_up in ("10", "T", "J", "Q", "K")
        else (11 if dealer_up == "A" else int(dealer_up))
    )
    if soft:
        if total >= 19:
            return STAND
        if total == 18:
            return HIT if up in (9, 10, 11) else STAND
        return HIT
    if total >= 17:
        return STAND
    if total <= 11:
        return HIT
    if total == 12:
        return STAND if 4 <= up <= 6 else HIT
    return STAND if 2 <= up <= 6 else HIT
