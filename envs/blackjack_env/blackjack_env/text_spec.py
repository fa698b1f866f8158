"""BlackJack as text for LLM policies: a format small enough for an 85k-parameter model.

Per decision the model sees ``player 15 soft dealer A action:`` and answers ``hit<eos>`` or
``stand<eos>``. After a hit the env's next observation is appended (env_mask 0) and the model sees
the whole history. Any other answer is an invalid action: the game ends with
``invalid_action_reward`` (default -1). Only the words of ``VOCABULARY`` are used (41 tokens with
a tokenizer's three special tokens).
"""

from __future__ import annotations

import random
import re
from typing import Any

from openenv_train import Action, StepResult
from openenv_train.rollout.spec import TextEnvSpec

from .deals import StateDeals
from .game import HIT, STAND, BlackjackGame, basic_strategy, rank_label

ANSWERS = {"hit": HIT, "stand": STAND}
#: Every word of the prompts and answers: totals reach 31 at most (21 + a ten-valued card).
VOCABULARY: tuple[str, ...] = (
    "player",
    "dealer",
    "soft",
    "hard",
    "action:",
    "hit",
    "stand",
    "A",
    *(str(n) for n in range(2, 32)),
)
_STATE_RE = re.compile(r"player (\d+) (soft|hard) dealer (\S+) action:")
_UPCARD_LABELS = {"A", "2", "3", "4", "5", "6", "7", "8", "9", "10"}


def dealer_label(upcard: Any) -> str:
    """``A``, ``2``..``9`` or ``10`` from a card (``"QH"``), a rank (``"T"``) or a label (``"10"``)."""
    text = str(upcard).strip()
    if text in _UPCARD_LABELS:
        return text
    if text and text[0] in "A23456789TJQK":
        return rank_label(text)
    raise ValueError(
        f"dealer_upcard: cannot read {upcard!r}; expected a card like 'QH' or a label like 'A'"
    )


def decision_text(observation: Any) -> str:
    """``player 15 soft dealer A action:`` from a ``BlackjackObservation`` (or a dict of its fields)."""
    get = observation.get if isinstance(observation, dict) else lambda k: getattr(observation, k)
    soft = "soft" if get("soft") else "hard"
    return f"player {int(get('player_total'))} {soft} dealer {dealer_label(get('dealer_upcard'))} action:"


def parse_answer(text: str) -> int | None:
    """``hit``/``stand`` (optionally followed by the EOS text) -> 0/1; anything else -> None."""
    words = text.replace("<eos>", " ").split()
    if len(words) != 1:
        return None
    return ANSWERS.get(words[0])


def basic_strategy_answer(prompt_text: str) -> str:
    """The basic-strategy answer for the last decision in ``prompt_text`` (for ``ScriptedPolicy``)."""
    found = _STATE_RE.findall(prompt_text)
    if not found:
        raise ValueError(
            f"no 'player N soft|hard dealer X action:' decision in {prompt_text[-80:]!r}"
        )
    total, soft, up = found[-1]
    return "hit" if basic_strategy(int(total), soft == "soft", up) == HIT else "stand"


def random_episode(rng: random.Random) -> list[tuple[str, str]]:
    """One well-formed game with uniformly random actions, as chat turns (``("user", env text)``,
    ``("assistant", "hit"/"stand")``, ...): the data of the short format warm-up before GRPO
    (``openenv_train.training.format_warmup``). It teaches the format, not a policy: random
    actions carry no information about which action is better."""
    game = BlackjackGame.deal(rng=random.Random(rng.getrandbits(64)))
    turns = [("user", decision_text(game_view(game)))]
    while True:
        action = rng.choice((HIT, STAND))
        turns.append(("assistant", "hit" if action == HIT else "stand"))
        game.apply(action)
        if game.done:
            return turns
        turns.append(("user", " " + decision_text(game_view(game))))


def game_view(game: BlackjackGame) -> dict[str, Any]:
    """The observation fields a prompt shows, read straight from an in-process game."""
    return {
        "player_total": game.player_total,
        "soft": game.player_soft,
        "dealer_upcard": game.dealer_upcard,
    }


class BlackjackTextSpec(TextEnvSpec):
    """``TextEnvSpec`` for ``blackjack_env``.

    ``seed``: when set, row ``r`` of call ``c`` is dealt with seed ``seed + c * 1_000_003 + k`` where
    ``k`` is the row (or the group, with ``same_deal_per_group=True``), so runs are reproducible.
    ``same_state_per_group=True`` deals each group's rows the same first state from different decks
    (``blackjack_env.deals.StateDeals``; states drawn by ``frequency ** state_weight_power``).
    The TRL dataset prompt is ignored (use ``RolloutConfig.use_dataset_prompt`` to prepend it).
    """

    invalid_action_reward = -1.0
    truncation_reward = -1.0
    vocabulary = VOCABULARY

    def __init__(
        self,
        *,
        seed: int | None = None,
        same_deal_per_group: bool = False,
        invalid_action_reward: float = -1.0,
        same_state_per_group: bool = False,
        state_weight_power: float = 1.0,
        deal_pool_size: int = 40_000,
    ) -> None:
        if same_state_per_group and (same_deal_per_group or seed is None):
            raise ValueError(
                "same_state_per_group needs a seed and excludes same_deal_per_group "
                "(one deal per group already shares the state)"
            )
        self.seed = seed
        self.same_deal_per_group = same_deal_per_group
        self.state_deals = (
            StateDeals(seed, deal_pool_size, state_weight_power) if same_state_per_group else None
        )
        self.invalid_action_reward = float(invalid_action_reward)
        self._calls = -1  # begin_run() makes the first batch call 0
        self._actions: dict[int, Action] | None = None

    @property
    def client_cls(self) -> Any:  # type: ignore[override]
        from blackjack_env import BlackjackEnv

        return BlackjackEnv

    def begin_run(self) -> None:
        """Called by the engine before each batch, so seeded deals differ from batch to batch."""
        self._calls += 1
        if self.state_deals is not None:
            self.state_deals.next_call()

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        if self.seed is None:
            return {}
        if self.state_deals is not None:
            return {"seed": self.state_deals.seed_for(self._calls, group, row)}
        k = group if self.same_deal_per_group else row
        return {"seed": self.seed + self._calls * 1_000_003 + k}

    def initial_prompt(self, result: StepResult[Any], prompt: Any) -> str:
        return decision_text(result.observation)

    def render(self, result: StepResult[Any]) -> str:
        return decision_text(result.observation)

    def parse_action(self, text: str) -> Action | None:
        action = parse_answer(text)
        if action is None:
            return None
        if self._actions is None:
            from blackjack_env import BlackjackAction

            # two immutable-in-practice instances: the client only serialises them
            self._actions = {a: BlackjackAction(action=a) for a in (HIT, STAND)}
        return self._actions[action]
