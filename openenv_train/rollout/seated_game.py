"""One game with the policy in every seat: the play loop, each seat's token record, and the
decoding of a finished game for the run viewer and for GRPO.

One env session plays one game (the seats protocol: every observation names ``current_player``
and shows that seat's view). Each seat keeps its own token record, built from only what it was
shown: its first view is its prompt, each later view is env text before its next answer. A
finished game gives each seat a :class:`SeatRecord`, and :func:`seat_row` turns one into the
:class:`~.records.EpisodeRecord` TRL trains on (with that seat's reward: the game's returns).

A spec with ``legal_answers(observation)`` (a list of answer strings, or None for no mask) masks
generation to them: an answer is one of their token sequences followed by EOS (the policy must
``supports_allowed_tokens``), so no illegal move is ever sampled; the logprobs stay the model's.

An answer that is not a legal move gets the mover the spec's ``invalid_action_reward`` whatever
the game's outcome; where the spec has a ``fallback_action(observation, rng)`` the game goes on
with that move in its place (a random legal one), so every seat plays and gets a row; without
one the game ends there (the others get 0).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..policy.interface import Generation, SamplingSettings
from .episode import LIMIT, RolloutConfig, token_turns
from .records import EpisodeRecord
from .tokens import EpisodeTokens, TokenCodec


@dataclass
class SeatRecord:
    """One seat's side of a finished game."""

    seat: int
    tokens: EpisodeTokens | None
    turns: int
    reward: float


@dataclass
class SelfPlayGame:
    """A finished game: every seat's record, the returns and why it ended (``done``,
    ``invalid``, or the turn limit)."""

    seed: int | None
    seats: list[SeatRecord]
    returns: list[float]
    stop: str
    moves: list[str] = field(default_factory=list)
    #: the seat of each model answer, in play order
    answers: list[int] = field(default_factory=list)
    #: the text of each answer (replayed ones included), in play order
    texts: list[str] = field(default_factory=list)
    #: the step result the game ended on (None where it was cut: the turn limit, or an illegal
    #: answer with no fallback move)
    end: Any = None


Generate = Callable[[list[int], SamplingSettings], Awaitable[Generation]]


async def play_game(
    client: Any,
    spec: Any,
    *,
    generate: Generate | list[Generate],
    codec: TokenCodec,
    config: RolloutConfig,
    reset_kwargs: dict[str, Any],
    sampling: SamplingSettings | None = None,
    replay: dict[int, list[str]] | None = None,
    explore: int | None = None,
) -> SelfPlayGame:
    """Play one game on ``client`` (an open session holding every seat) with ``generate`` in
    every seat (or ``generate[s]`` in seat ``s``). ``config.max_turns`` bounds each seat's
    answers. ``replay[s]``: seat ``s``'s first answers, given instead of generated (in its
    context as the model's answer would be, masked out of training like env text): with the
    seed, the game goes back to a position it reached before and plays on from there.
    ``explore``: the replayed seat's first answer of its own is its ``explore``-th legal answer,
    its later ones context (``SelfPlayRunner``'s ``replay_explore``)."""
    sampling = sampling or config.sampling(codec.tokenizer)
    replay = dict(replay or {})
    branch = {s: len(given) for s, given in replay.items()} if explore is not None else {}
    result = await client.reset(**reset_kwargs)
    n = int(result.observation.num_players)
    tokens: list[EpisodeTokens | None] = [None] * n
    turns = [0] * n
    moves: list[str] = []
    answers: list[int] = []
    texts: list[str] = []
    invalid: set[int] = set()
    rng = random.Random(reset_kwargs.get("seed"))
    while not result.done:
        obs = result.observation
        s = obs.current_player
        if not isinstance(s, int) or not 0 <= s < n:
            raise RuntimeError(
                f"the env named no seat to move (current_player={s!r}) in a game that is not "
                "over: a seated env must name current_player in every observation"
            )
        if turns[s] >= config.max_turns:
            rewards = [spec.truncation_reward] * n
            return _game(reset_kwargs, tokens, turns, rewards, LIMIT, moves, answers, texts)
        seat_tokens = tokens[s] = _seat_view(tokens[s], spec, result, codec)
        given = replay.get(s, [])
        text = given[turns[s]] if turns[s] < len(given) else ""
        action = _action(spec, text, obs) if text else None  # None: the model answers
        if action is not None:
            eos = codec.tokenizer.eos_token_id
            seat_tokens.add_env(codec.tokenizer.encode(text, add_special_tokens=False) + [eos])
        else:
            replay.pop(s, None)  # the game went another way than before: the model takes over
            answer = generate[s] if isinstance(generate, list) else generate
            at = turns[s] - branch.get(s, turns[s])  # > 0: after the explored answer
            forced = explore if s in branch and at == 0 else None
            text = await _model_answer(
                answer, seat_tokens, spec, obs, codec, sampling, forced, at > 0
            )
            action = _action(spec, text, obs)
        turns[s] += 1
        answers.append(s)
        texts.append(text)
        if action is None:
            fallback = getattr(spec, "fallback_action", None)
            if fallback is None:  # the game ends here; seats that never moved get no row
                rewards = [0.0] * n
                rewards[s] = float(spec.invalid_action_reward)
                return _game(reset_kwargs, tokens, turns, rewards, "invalid", moves, answers, texts)
            invalid.add(s)
            action = fallback(obs, rng)
        moves.append(getattr(action, "move", str(action)))
        result = await client.step(action)
    returns = _returns(result, n, invalid, spec)
    stop = "invalid" if invalid else "done"
    return _game(reset_kwargs, tokens, turns, returns, stop, moves, answers, texts, end=result)


def _seat_view(
    seat_tokens: EpisodeTokens | None, spec: Any, result: Any, codec: TokenCodec
) -> EpisodeTokens:
    """The seat's record with the game as it now sees it: its first prompt, or the env's turn."""
    if seat_tokens is None:
        return EpisodeTokens(codec.prompt_ids([_user(spec.initial_prompt(result, None))]))
    seat_tokens.add_env(codec.turn_ids([{"role": spec.env_role, "content": spec.render(result)}]))
    return seat_tokens


def _returns(result: Any, n: int, invalid: set[int], spec: Any) -> list[float]:
    """Each seat's return from the finished game (the spec's invalid-answer reward for a seat
    that answered an illegal move and was given the fallback)."""
    returns = [float(r) for r in result.observation.rewards]
    if len(returns) != n:
        raise RuntimeError(
            f"the finished game's observation has rewards {returns!r}, not one per seat ({n}); "
            "a seated env must send every seat's return when done"
        )
    for s in invalid:
        returns[s] = float(spec.invalid_action_reward)
    return returns


async def _model_answer(
    answer: Generate,
    seat_tokens: EpisodeTokens,
    spec: Any,
    obs: Any,
    codec: TokenCodec,
    sampling: SamplingSettings,
    forced: int | None = None,
    context: bool = False,
) -> str:
    """The policy's answer in the seat's context (masked to the legal answers where the spec
    lists them; ``forced``: to the ``forced``-th of them, cycled), appended to its record as a
    model turn with the model's own logprobs (``context``: as context, masked out of
    training); returns its text."""
    allowed = legal_answer_ids(spec, obs, codec.tokenizer)
    if forced is not None:
        if allowed is None:
            raise RuntimeError(
                "exploring a replayed position needs the spec's legal_answers (mask_illegal)"
            )
        ordered = sorted(allowed)
        allowed = frozenset([ordered[forced % len(ordered)]])
    if allowed is None:
        gen = await answer(seat_tokens.context(), sampling)
    else:
        gen = await answer(seat_tokens.context(), sampling, allowed=allowed)  # type: ignore[call-arg]
    if not gen.token_ids:
        raise RuntimeError("the policy returned no tokens; it must generate at least one")
    if not context:
        seat_tokens.add_model(list(gen.token_ids), list(gen.logprobs), gen.text)
    else:
        seat_tokens.add_env(list(gen.token_ids))
    return gen.text


def seats_of(spec: Any) -> int:
    """The seats one policy holds in each episode of ``spec``: its ``selfplay_seats`` (a spec
    that plays every seat of a game), else 1."""
    return max(1, int(getattr(spec, "selfplay_seats", 1) or 1))


def legal_answer_ids(spec: Any, obs: Any, tokenizer: Any) -> frozenset[tuple[int, ...]] | None:
    """The spec's ``legal_answers(observation)`` as token sequences, each ending in EOS (None:
    no mask)."""
    legal = getattr(spec, "legal_answers", None)
    answers = legal(obs) if legal is not None else None
    if answers is None:
        return None
    if not answers:
        raise RuntimeError("legal_answers gave no answer to mask generation to")
    eos = tokenizer.eos_token_id
    return frozenset(tuple(tokenizer.encode(a, add_special_tokens=False)) + (eos,) for a in answers)


def _action(spec: Any, text: str, obs: Any) -> Any:
    """The spec's legal action in ``text`` (``legal_action(text, observation)`` where the spec
    checks legality, else ``parse_action``), or None."""
    legal = getattr(spec, "legal_action", None)
    return legal(text, obs) if legal is not None else spec.parse_action(text)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _game(
    kwargs: dict[str, Any],
    tokens: list[EpisodeTokens | None],
    turns: list[int],
    rewards: list[float],
    stop: str,
    moves: list[str],
    answers: list[int],
    texts: list[str],
    end: Any = None,
) -> SelfPlayGame:
    seats = [SeatRecord(s, tokens[s], turns[s], rewards[s]) for s in range(len(tokens))]
    return SelfPlayGame(kwargs.get("seed"), seats, list(rewards), stop, moves, answers, texts, end)


def game_turns(game: SelfPlayGame, codec: TokenCodec, spec: Any) -> dict[str, Any]:
    """One game as the run viewer's episode, seat by seat in play order: before each answer,
    what its seat was shown (its prompt, later env text), then the answer (text, tokens,
    logprobs), every turn naming its ``seat``; then the view the game ended on. ``rewards``:
    every seat's (``reward`` stays None: a game has one per seat); ``num_turns``: all answers."""
    pieces = {
        rec.seat: _pieces(token_turns(rec.tokens, codec.tokenizer))
        for rec in game.seats
        if rec.tokens is not None
    }
    turns: list[dict[str, Any]] = []
    for s in game.answers:
        if pieces.get(s):
            turns += [{**t, "seat": s} for t in pieces[s].pop(0)]
    if game.end is not None:
        seat = getattr(game.end.observation, "seat", None)
        turns.append({"role": "env", "text": spec.render(game.end), "seat": seat})
    return {
        "reward": None,
        "rewards": list(game.returns),
        "stop": game.stop,
        "num_turns": sum(rec.turns for rec in game.seats),
        "turns": turns,
    }


def _pieces(turns: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """One seat's decoded turns split at its answers: each piece is what the seat was shown
    (the prompt, or env text) and the answer to it."""
    pieces: list[list[dict[str, Any]]] = [[]]
    for t in turns:
        pieces[-1].append(t)
        if t["role"] == "model":
            pieces.append([])
    if not pieces[-1]:
        pieces.pop()
    return pieces


def seat_row(
    rec: SeatRecord, *, row: int, group: int, prompt: Any, stop: str, loss_weight: float = 1.0
) -> EpisodeRecord:
    """The TRL row of one seat; a lost game's return times ``loss_weight`` (loss aversion)."""
    metrics = {"seat": rec.seat, "turns": rec.turns, "stop_reason": stop}
    if rec.tokens is None:
        raise RuntimeError(
            f"seat {rec.seat} never moved in a game that ended '{stop}', so it has no row for "
            "GRPO: give the spec a fallback_action(observation, rng) so that games go on past an "
            "illegal answer"
        )
    t = rec.tokens
    metrics.update(model_tokens=t.model_tokens, env_tokens=t.env_tokens)
    return EpisodeRecord(
        row=row,
        group=group,
        prompt=prompt,
        prompt_ids=t.prompt_ids,
        completion_ids=t.completion_ids,
        logprobs=t.logprobs,
        env_mask=t.env_mask,
        reward=rec.reward * loss_weight if rec.reward < 0 else rec.reward,
        num_turns=rec.turns,
        metrics=metrics,
        model_texts=list(t.model_texts),
    )
