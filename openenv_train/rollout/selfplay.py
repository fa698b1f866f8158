"""Self-play: one policy holds every seat of a game, batched across seats and sessions.

Each game is played by :func:`~.seated_game.play_game` (every seat its own token record). Every
seat waiting on the model, in every game, joins one ``GenerationBatcher`` call.

Rows for GRPO (:class:`SelfPlayRunner`): with ``advantages="group"`` the games of a group share
a seed, and each seat's rows of that group form one GRPO group (groups per seat and start
state); with ``advantages="role"`` every game has its own seed and each seat's rows of the whole
batch form one group: the baseline is that seat's mean return (role-conditioned advantages).

Given an :class:`~.episode.EpisodeRecorder` (the periodic evals' run-viewer sample), the runner
keeps the first games it plays decoded seat by seat (:func:`~.seated_game.game_turns`): the
episode format of ``play_episode``'s recorder, each turn naming its ``seat``, with every seat's
``rewards``.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..policy.interface import Policy
from .batcher import GenerationBatcher, seeded_turns
from .episode import EpisodeRecorder, RolloutConfig
from .records import EpisodeRecord, RolloutBatch
from .seated_game import SeatRecord, SelfPlayGame, game_turns, play_game, seat_row
from .tokens import TokenCodec

Advantages = Literal["group", "role"]
ADVANTAGES = ("group", "role")


@dataclass
class _Task:
    """One game to play: its seed, the seats whose rows are kept (``seats``) and, per seat, the
    batcher that answers for it."""

    unit: int
    seed: int
    seats: tuple[int, ...]
    batchers: list[GenerationBatcher]
    #: extra reset arguments (a seat held against the server's built-in opponent, openings)
    reset: dict[str, Any] = field(default_factory=dict)
    #: per seat, the first answers given rather than generated (a lost game played again)
    replay: dict[int, list[str]] = field(default_factory=dict)
    #: with ``replay``: which legal answer the seat's first answer of its own is (None: sampled)
    explore: int | None = None


class SelfPlayRunner:
    """Plays TRL's batches by self-play on open seated sessions (``clients``: ``EnvClient``
    instances, one game each at a time).

    ``run(prompts, group_size)`` returns one row per prompt: ``len(prompts) / num_seats`` rows per
    seat, ordered so that every ``group_size`` consecutive rows are one GRPO group of one seat
    (see the module docstring for ``advantages``). ``seed`` makes the games' seeds repeatable;
    ``config.episode_seed`` the answers too: each seat of each game samples from a stream of its
    own (per batch, game and seat), so what a game plays does not hang on which answers shared
    its policy call (a policy that ``supports_row_seeds``).

    ``opponents`` (a callable giving the past policies, e.g. a checkpoint pool) with
    ``pool_share`` > 0: that share of the groups is played against a past policy drawn from
    it: the live policy in one seat (whose rows are kept), the past one in the others; each seat's
    rows of such a group come from their own games. ``builtin_share`` of the groups is played
    the same way against one of the env server's built-in ``builtin_opponents`` (``random``,
    ``scripted``, ``solver``; drawn per group): the session holds one seat and the server plays
    the others.

    ``openings`` > 0: each group's games start after a random number (0 to ``openings``) of
    random moves, the same for the group (the env's ``reset(openings=k)`` draws them from the
    seed): its answers are compared from positions all through the game, not only the first.
    The evals (:meth:`play`) start from the game's own start.

    ``replay_share`` > 0 (with ``builtin_share``): the runner keeps the last ``replay_size``
    games per seat that the policy lost against a built-in opponent, and that share of the
    groups plays one of them again, per seat: the same seed and opponent, the seat's answers
    given up to one of its positions in that game, drawn uniformly (so the seeded opponent
    answers as it did), then the group's games play on from there. The given answers are in
    each row's context as they were, masked out of training: the group compares only answers
    from a position of a game that was lost (the losing move may be the last answer, or one
    that let the other side fork earlier). A seat with no lost game kept plays a usual group
    against a built-in opponent. ``replay_explore``: in such a group, the seat's first answer
    after the given ones is not sampled but goes through the legal answers (game ``k`` of the
    group plays the ``k``-th, cycled; needs the spec's ``legal_answers``), so the group compares
    every move from the position, also the ones the policy has stopped sampling there (a
    confident policy samples one move 16 times out of 16, and GRPO then has nothing to compare);
    only that answer is trained, the seat's later ones are context, and the group's games are not
    kept as lost games (their forced moves lose most of them).

    ``loss_weight`` > 1: a row's reward is its seat's return times ``loss_weight`` where the
    seat lost (the metrics keep the returns): a seat then prefers a safe draw to a risky win,
    what a game that must never be lost asks for; zero-sum play (poker) keeps 1.

    ``recorder`` (an :class:`~.episode.EpisodeRecorder`) keeps the first games played, in the
    order they start, decoded seat by seat (:func:`game_turns`); none are decoded without one.
    """

    def __init__(
        self,
        policy: Policy,
        spec: Any,
        clients: list[Any],
        *,
        config: RolloutConfig,
        num_seats: int = 2,
        advantages: Advantages = "group",
        seed: int = 0,
        reset_kwargs: dict[str, Any] | None = None,
        opponents: Callable[[], list[Policy]] | None = None,
        pool_share: float = 0.0,
        builtin_share: float = 0.0,
        builtin_opponents: tuple[str, ...] = ("random",),
        openings: int = 0,
        replay_share: float = 0.0,
        replay_size: int = 512,
        replay_explore: bool = False,
        loss_weight: float = 1.0,
        recorder: EpisodeRecorder | None = None,
    ) -> None:
        if advantages not in ADVANTAGES:
            raise ValueError(f"advantages must be one of {ADVANTAGES}, got {advantages!r}")
        if not clients:
            raise ValueError("clients: give at least one open session")
        shares = (
            ("pool_share", pool_share),
            ("builtin_share", builtin_share),
            ("replay_share", replay_share),
        )
        for name, share in shares:
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {share}")
        self.policy = policy
        self.spec = spec
        self.clients = list(clients)
        self.config = config
        self.num_seats = num_seats
        self.advantages = advantages
        self.seed = seed
        self.reset_kwargs = dict(reset_kwargs or {})
        self.opponents = opponents
        self.pool_share = pool_share
        self.builtin_share = builtin_share
        if builtin_share and not builtin_opponents:
            raise ValueError("builtin_opponents: name at least one built-in opponent")
        self.builtin_opponents = tuple(builtin_opponents)
        if openings < 0:
            raise ValueError(f"openings must be >= 0, got {openings}")
        self.openings = openings
        if replay_share and not builtin_share:
            raise ValueError(
                "replay_share replays games lost against a built-in opponent (the server's seeded "
                "opponent answers again as it did): set builtin_share > 0 too"
            )
        if replay_size < 1:
            raise ValueError(f"replay_size must be >= 1, got {replay_size}")
        if not loss_weight >= 1.0:
            raise ValueError(
                f"loss_weight must be >= 1 (1: the game's own returns), got {loss_weight}"
            )
        self.loss_weight = loss_weight
        self.replay_share = replay_share
        self.replay_explore = replay_explore
        #: per seat: (seed, reset arguments, the seat's answers) of games it lost
        self._lost: list[deque[tuple[int, dict[str, Any], list[str]]]] = [
            deque(maxlen=replay_size) for _ in range(num_seats)
        ]
        self.recorder = recorder  # keeps the first games decoded for the run viewer (evals)
        self.codec = TokenCodec(policy.tokenizer, chat_template=config.chat_template)
        self.batcher = self._batcher(policy)
        self._past: dict[int, GenerationBatcher] = {}
        self._rng = random.Random(seed)
        self._calls = 0
        self._played = 0  # play_tasks calls: part of each seeded answer's sampling stream
        self.last_games: list[SelfPlayGame] = []

    def _batcher(self, policy: Policy) -> GenerationBatcher:
        c = self.config
        return GenerationBatcher(policy, max_batch_size=c.max_batch_size, max_wait_s=c.max_wait_s)

    def _units(self, rows: int, group_size: int) -> tuple[int, int]:
        """``(units, games per unit)``: the seeds of a batch and the games each seed plays."""
        n = self.num_seats
        if rows % n:
            raise ValueError(f"{rows} rows do not split into {n} seats: use a multiple of {n}")
        per_seat = rows // n
        if self.advantages == "role":
            if group_size != per_seat:
                raise ValueError(
                    f"advantages='role' needs num_generations = rows / seats = {per_seat} (one "
                    f"group per seat), got {group_size}"
                )
            return per_seat, 1
        if per_seat % group_size:
            raise ValueError(
                f"advantages='group': {per_seat} rows per seat is not a multiple of "
                f"num_generations={group_size}"
            )
        return per_seat // group_size, group_size

    def _tasks(self, units: int, per_unit: int, base: int) -> list[_Task]:
        live, n = self.batcher, self.num_seats
        past = list(self.opponents()) if self.opponents is not None and self.pool_share else []
        tasks = []
        for u in range(units):
            seed = base + u
            start = {"openings": self._rng.randint(0, self.openings)} if self.openings else {}
            if self.replay_share and any(self._lost) and self._rng.random() < self.replay_share:
                for s in range(n):
                    tasks += self._replayed(u, s, seed, start, per_unit)
            elif self.builtin_share and self._rng.random() < self.builtin_share:
                for s in range(n):
                    opponent = self._rng.choice(self.builtin_opponents)
                    held = {**start, "seat": s, "opponent": opponent}
                    tasks += [_Task(u, seed, (s,), [live] * n, held) for _ in range(per_unit)]
            elif past and self._rng.random() < self.pool_share:
                other = past[self._rng.randrange(len(past))]
                old = self._past.get(id(other)) or self._past.setdefault(
                    id(other), self._batcher(other)
                )
                for s in range(n):
                    batchers = [live if k == s else old for k in range(n)]
                    tasks += [_Task(u, seed, (s,), batchers, start) for _ in range(per_unit)]
            else:
                every = tuple(range(n))
                tasks += [_Task(u, seed, every, [live] * n, start) for _ in range(per_unit)]
        return tasks

    def _replayed(
        self, unit: int, seat: int, seed: int, start: dict[str, Any], per_unit: int
    ) -> list[_Task]:
        """``seat``'s group of a replay unit: a lost game of its own played again from one of the
        seat's positions in it (a usual group against a built-in opponent if none is kept)."""
        live, n, lost = self.batcher, self.num_seats, self._lost[seat]
        if not lost:
            held = {**start, "seat": seat, "opponent": self._rng.choice(self.builtin_opponents)}
            return [_Task(unit, seed, (seat,), [live] * n, held) for _ in range(per_unit)]
        seed, reset, given = lost[self._rng.randrange(len(lost))]
        back = self._rng.randint(1, len(given))
        replay = {seat: given[: len(given) - back]}
        return [
            _Task(
                unit, seed, (seat,), [live] * n, reset, replay, k if self.replay_explore else None
            )
            for k in range(per_unit)
        ]

    def _keep_lost(self, tasks: list[_Task], played: list[SelfPlayGame]) -> None:
        """Keep the games a seat lost against a built-in opponent (each position once). An
        exploring group's games are not kept: it loses most of them by the moves it forces, and
        those would crowd out the losses of the policy's own play (a replayed game it lost
        again by its own moves is kept: a position it still loses comes back more often)."""
        for task, game in zip(tasks, played, strict=True):
            if "opponent" not in task.reset or task.explore is not None or game.stop != "done":
                continue
            (s,) = task.seats
            if game.returns[s] < 0:
                given = [t for t, a in zip(game.texts, game.answers, strict=True) if a == s]
                entry = (task.seed, dict(task.reset), given)
                if entry not in self._lost[s]:
                    self._lost[s].append(entry)

    async def play_tasks(self, tasks: list[_Task]) -> list[SelfPlayGame]:
        """Play ``tasks`` on the open sessions, every seat's answers batched with the others'."""
        queue: asyncio.Queue[int] = asyncio.Queue()
        for g in range(len(tasks)):
            queue.put_nowait(g)
        out: list[SelfPlayGame | None] = [None] * len(tasks)
        batchers = {id(b): b for t in tasks for b in t.batchers}.values()
        self._played += 1
        seed, played = self.config.episode_seed, self._played

        def answers(g: int, task: _Task) -> list[Any]:
            """Each seat's generate; seeded (``config.episode_seed``): its own stream per
            (batch, game, seat), so the run samples the same however the games interleave."""
            if seed is None:
                return [b.generate for b in task.batchers]
            return [
                seeded_turns(b.generate, seed, played, g, s) for s, b in enumerate(task.batchers)
            ]

        async def worker(client: Any) -> None:
            for b in batchers:
                b.register()
            try:
                while not queue.empty():
                    g = queue.get_nowait()
                    task = tasks[g]
                    slot = self.recorder.reserve() if self.recorder is not None else None
                    game = out[g] = await play_game(
                        client,
                        self.spec,
                        generate=answers(g, task),
                        codec=self.codec,
                        config=self.config,
                        reset_kwargs={**self.reset_kwargs, **task.reset, "seed": task.seed},
                        replay=task.replay,
                        explore=task.explore,
                    )
                    if slot is not None:
                        slot.put(game_turns(game, self.codec, self.spec))
            finally:
                for b in batchers:
                    b.unregister()

        await asyncio.gather(*(worker(c) for c in self.clients[: len(tasks)]))
        self.last_games = [g for g in out if g is not None]
        return self.last_games

    async def play(self, games: int, per_seed: int = 1) -> list[SelfPlayGame]:
        """``games`` self-play games (the live policy in every seat), ``per_seed`` consecutive
        ones sharing a seed."""
        base = self._next_base()
        n = self.num_seats
        tasks = [
            _Task(g // per_seed, base + g // per_seed, tuple(range(n)), [self.batcher] * n)
            for g in range(games)
        ]
        return await self.play_tasks(tasks)

    def _next_base(self) -> int:
        base = self.seed + self._calls * 1_000_003
        self._calls += 1
        return base

    async def run(self, prompts: list[Any], group_size: int) -> RolloutBatch:
        units, per_unit = self._units(len(prompts), group_size)
        tasks = self._tasks(units, per_unit, self._next_base())
        played = await self.play_tasks(tasks)
        if self.replay_share:
            self._keep_lost(tasks, played)
        by_slot: dict[tuple[int, int], list[tuple[SeatRecord, str]]] = {}
        for task, game in zip(tasks, played, strict=True):
            for s in task.seats:
                by_slot.setdefault((task.unit, s), []).append((game.seats[s], game.stop))
        n = self.num_seats
        if self.advantages == "role":
            order = [by_slot[(u, s)][0] for s in range(n) for u in range(units)]
        else:
            order = [rec for u in range(units) for s in range(n) for rec in by_slot[(u, s)]]
        rows: list[EpisodeRecord | None] = [
            seat_row(
                rec,
                row=i,
                group=i // group_size,
                prompt=prompts[i],
                stop=stop,
                loss_weight=self.loss_weight,
            )
            for i, (rec, stop) in enumerate(order)
        ]
        metrics = selfplay_metrics(
            [g for t, g in zip(tasks, played, strict=True) if len(t.seats) == n], n
        )
        builtin = ["opponent" in t.reset for t in tasks]
        metrics["pool_games"] = sum(
            len(t.seats) < n and not b for t, b in zip(tasks, builtin, strict=True)
        )
        metrics["builtin_games"] = sum(builtin)
        metrics["replayed_games"] = sum(bool(t.replay) for t in tasks)
        return RolloutBatch(rows, group_size, metrics=metrics)

    async def aclose(self) -> None:
        await asyncio.gather(*(c.close() for c in self.clients), return_exceptions=True)
        for batcher in [self.batcher, *self._past.values()]:
            await batcher.aclose()
        self._past.clear()


def selfplay_metrics(games: list[SelfPlayGame], num_seats: int) -> dict[str, float]:
    """Per-seat mean return, win and draw shares, and the share of games ended by an invalid answer."""
    if not games:
        return {}
    n = len(games)
    out: dict[str, float] = {"invalid_share": sum(g.stop == "invalid" for g in games) / n}
    for s in range(num_seats):
        rets = [g.returns[s] for g in games]
        out[f"seat{s}/mean_return"] = sum(rets) / n
        out[f"seat{s}/win"] = sum(r > 0 for r in rets) / n
        out[f"seat{s}/draw"] = sum(r == 0 for r in rets) / n
    return out
