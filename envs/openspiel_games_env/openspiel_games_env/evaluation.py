"""Evaluation of a policy in a seated game: exact NashConv (OpenSpiel) and win/draw/loss per seat.

``model_policy`` turns a language model into an OpenSpiel ``TabularPolicy``: at every
information state of every seat it builds the exact context self-play shows that seat (its
earlier views and answers, then the current view, through the same ``TokenCodec``), scores each
legal answer (``word<eos>``) in one batched forward pass, and keeps the probabilities
renormalised over the legal answers (the policy given that it answers legally; the mass on
illegal answers is reported apart as ``illegal_mass``). ``nash_conv`` of that policy is exact:
OpenSpiel walks the whole game tree (Kuhn and Leduc poker and other small games).

``win_draw_loss`` plays ``games`` games per seat against a built-in opponent through an env
server (the seat protocol, one seat held) and counts the outcomes. ``exact_vs_random`` needs no
sampling: in small deterministic games it walks every game a random player can make against the
model's greedy play and sums their probabilities (a loss rate of 1e-4 is told apart from 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .games import is_deterministic_perfect_information, load, move_names, seat_text
from .text_spec import answer_word, seat_view


def seat_contexts(game_name: str, state: Any, seat: int) -> tuple[list[str], list[str]]:
    """``(views, answers)`` the seat was shown and gave up to ``state`` (one more view than
    answers: the last view is the decision at ``state``)."""
    game = load(game_name)
    replay = game.new_initial_state()
    views: list[str] = []
    answers: list[str] = []
    for action in state.history():
        if not replay.is_chance_node() and replay.current_player() == seat:
            ids, names = move_names(replay, seat)
            text, info = seat_text(game, replay, seat)
            views.append(seat_view(game_name, seat, text, info, names))
            answers.append(answer_word(game_name, names[ids.index(action)], action))
        replay.apply_action(action)
    ids, names = move_names(state, seat)
    text, info = seat_text(game, state, seat)
    views.append(seat_view(game_name, seat, text, info, names))
    return views, answers


def context_ids(
    codec: Any, views: list[str], answers: list[str], env_role: str = "user"
) -> list[int]:
    """The token ids self-play feeds that seat for its next answer (as ``play_game`` builds them)."""
    eos = codec.tokenizer.eos_token_id
    ids = codec.prompt_ids([{"role": "user", "content": views[0]}])
    for answer, view in zip(answers, views[1:], strict=True):
        ids += codec.encode_text(answer) + [eos]
        ids += codec.turn_ids([{"role": env_role, "content": view}])
    return ids


@dataclass
class ModelPolicy:
    """The tabular policy of a model and the probability mass it put on illegal answers (mean
    over information states)."""

    policy: Any
    illegal_mass: float


def _answer_sequences(
    tokenizer: Any, game_name: str, table: Any
) -> list[tuple[int, int, list[int], int]]:
    """``(row, action, ids, answer start)`` for every legal answer at every information state of
    ``table``: the self-play context of that seat, then the answer word and EOS."""
    from openenv_train.rollout.tokens import TokenCodec

    codec = TokenCodec(tokenizer, chat_template=False)
    seqs = []
    for row in table.state_lookup.values():
        state = table.states[row]
        seqs += _state_answers(codec, game_name, state, row, [tokenizer.eos_token_id])
    return seqs


def _state_answers(
    codec: Any, game_name: str, state: Any, row: int, end: list[int]
) -> list[tuple[int, int, list[int], int]]:
    """``(row, action, ids, answer start)`` for each legal answer of the seat to move at
    ``state``: its self-play context, the answer's word, then ``end``."""
    seat = state.current_player()
    ctx = context_ids(codec, *seat_contexts(game_name, state, seat))
    ids, names = move_names(state, seat)
    return [
        (row, a, ctx + codec.encode_text(answer_word(game_name, name, a)) + end, len(ctx))
        for a, name in zip(ids, names, strict=True)
    ]


def _answer_logprobs(model: Any, tokenizer: Any, seqs: list) -> Any:
    """log p(answer and EOS | context) of every sequence, one batched forward pass (a tensor)."""
    import torch

    device = next(model.parameters()).device
    width = max(len(s[2]) for s in seqs)
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    batch = torch.full((len(seqs), width), pad, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.float)
    for i, (_, _, ids, start) in enumerate(seqs):
        batch[i, : len(ids)] = torch.tensor(ids)
        attn[i, : len(ids)] = 1
        mask[i, start : len(ids)] = 1.0
    logits = model(batch.to(device), attention_mask=attn.to(device)).logits.float()
    logp = torch.log_softmax(logits[:, :-1], dim=-1)
    token_lp = logp.gather(-1, batch[:, 1:].to(device)[..., None]).squeeze(-1)
    return (token_lp * mask[:, 1:].to(device)).sum(-1)


def model_policy(model: Any, tokenizer: Any, game_name: str) -> ModelPolicy:
    """The model's action distribution at every information state as an OpenSpiel
    ``TabularPolicy`` (see the module docstring)."""
    import torch
    from open_spiel.python import policy as spiel_policy

    table = spiel_policy.TabularPolicy(load(game_name))
    seqs = _answer_sequences(tokenizer, game_name, table)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        lps = _answer_logprobs(model, tokenizer, seqs).cpu()
    if was_training:
        model.train()
    probs: dict[int, dict[int, float]] = {}
    for (row, a, _, _), lp in zip(seqs, lps.tolist(), strict=True):
        probs.setdefault(row, {})[a] = float(torch.tensor(lp).exp())
    illegal = []
    for row, by_action in probs.items():
        mass = sum(by_action.values())
        illegal.append(1.0 - mass)
        table.action_probability_array[row, :] = 0.0
        for a, p in by_action.items():
            table.action_probability_array[row, a] = p / mass if mass > 0 else 1 / len(by_action)
    return ModelPolicy(table, sum(illegal) / len(illegal))


class PolicyAverage:
    """The average of tabular policies over a run, each weighted at every information state by
    its player's own reach probability: the average strategy that CFR and fictitious play report,
    which approaches a Nash equilibrium where the latest policy circles around one."""

    def __init__(self, game_name: str) -> None:
        from open_spiel.python import policy as spiel_policy

        self.game_name = game_name
        self._sum = None
        self._reach = None
        self.count = 0
        self._template = spiel_policy.TabularPolicy(load(game_name))

    def add(self, policy: Any, weight: float = 1.0) -> None:
        """Add ``policy`` with ``weight`` (CFR+ weighs its k-th iterate k: later, better policies
        count more)."""
        reach = _own_reach(self.game_name, policy) * weight
        weighted = policy.action_probability_array * reach[:, None]
        if self._sum is None:
            self._sum, self._reach = weighted.copy(), reach.copy()
        else:
            self._sum += weighted
            self._reach += reach
        self.count += 1

    def policy(self) -> Any:
        """The average policy (uniform over legal moves where no policy reached a state)."""
        import numpy as np

        if self._sum is None:
            raise ValueError("no policy added yet")
        table = self._template.__copy__()
        legal = self._template.legal_actions_mask.astype(float)
        avg = np.where(
            self._reach[:, None] > 0, self._sum / np.maximum(self._reach, 1e-12)[:, None], 0.0
        )
        uniform = legal / legal.sum(axis=1, keepdims=True)
        table.action_probability_array = np.where(avg.sum(axis=1, keepdims=True) > 0, avg, uniform)
        return table


def _own_reach(game_name: str, policy: Any) -> Any:
    """Each information state's reach probability by its own player's moves under ``policy``."""
    import numpy as np

    reach = np.zeros(len(policy.state_lookup))
    seen = set()

    def walk(state: Any, own: list[float]) -> None:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for a, _ in state.chance_outcomes():
                walk(state.child(a), own)
            return
        p = state.current_player()
        row = policy.state_index(state)
        if row not in seen:
            seen.add(row)
            reach[row] = own[p]
        probs = policy.action_probability_array[row]
        for a in state.legal_actions():
            nxt = list(own)
            nxt[p] *= probs[a]
            walk(state.child(a), nxt)

    game = load(game_name)
    walk(game.new_initial_state(), [1.0] * game.num_players())
    return reach


def distill(
    model: Any, tokenizer: Any, game_name: str, target: Any, *, steps: int = 300, lr: float = 3e-3
) -> float:
    """Fit ``model``'s answers at every information state to the tabular policy ``target``
    (cross-entropy over the legal answers, each a whole ``word<eos>``): how a run's average
    policy becomes one model (as NFSP's average network does). Returns the final loss."""
    import torch

    seqs = _answer_sequences(tokenizer, game_name, target)
    weights = torch.tensor(
        [float(target.action_probability_array[row, a]) for row, a, _, _ in seqs]
    )
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    was_training = model.training
    model.train()
    loss = torch.tensor(0.0)
    for _ in range(steps):
        lps = _answer_logprobs(model, tokenizer, seqs)
        loss = -(weights.to(lps.device) * lps).sum() / len(target.state_lookup)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if not was_training:
        model.eval()
    return float(loss.detach())


#: policy decisions ``exact_vs_random`` may score before it refuses the game as too big
MAX_EXACT_DECISIONS = 50_000


def exact_vs_random(
    game_name: str, seat: int, choose: Callable[[list[Any]], list[int]]
) -> dict[str, float]:
    """Exact win/draw/loss probabilities of the deterministic player ``choose`` (states in, one
    action per state out) in ``seat`` against a uniformly random player: every game the random
    player can make is walked, ``choose`` called once per depth with all of its decisions there.
    Deterministic perfect-information games with at most ``MAX_EXACT_DECISIONS`` decisions
    (tic-tac-toe: about 1,300 per seat)."""
    game = load(game_name)
    if not is_deterministic_perfect_information(game):
        raise ValueError(
            f"exact play against random walks deterministic perfect-information games; "
            f"{game_name} is not one: count sampled games (win_draw_loss) instead"
        )
    out = {"win": 0.0, "draw": 0.0, "loss": 0.0}
    frontier, decisions = [(game.new_initial_state(), 1.0)], 0
    while frontier:
        mine, stack = [], frontier
        while stack:  # the random player's moves, down to the chooser's next decisions
            state, p = stack.pop()
            if state.is_terminal():
                r = state.returns()[seat]
                out["win" if r > 0 else "loss" if r < 0 else "draw"] += p
            elif state.current_player() == seat:
                mine.append((state, p))
            else:
                legal = state.legal_actions()
                stack.extend((state.child(a), p / len(legal)) for a in legal)
        decisions += len(mine)
        if decisions > MAX_EXACT_DECISIONS:
            raise ValueError(
                f"{game_name} needs more than {MAX_EXACT_DECISIONS:,} decisions to walk against "
                "random play: count sampled games (win_draw_loss) instead"
            )
        actions = choose([state for state, _ in mine]) if mine else []
        frontier = [(state.child(a), p) for (state, p), a in zip(mine, actions, strict=True)]
    return out


def greedy_choices(
    model: Any, tokenizer: Any, game_name: str, *, batch_size: int = 256
) -> Callable[[list[Any]], list[int]]:
    """``exact_vs_random``'s chooser for a model: at each state, the legal answer the model
    gives most probability in the self-play context of the seat to move (the masked greedy
    evals' pick)."""
    import torch

    from openenv_train.rollout.tokens import TokenCodec

    codec = TokenCodec(tokenizer, chat_template=False)

    def choose(states: list[Any]) -> list[int]:
        picks = []
        was_training = model.training
        model.eval()
        try:
            for i in range(0, len(states), batch_size):
                chunk, seqs = states[i : i + batch_size], []
                for row, state in enumerate(chunk):  # the word only: the mask forces EOS
                    seqs += _state_answers(codec, game_name, state, row, [])
                with torch.no_grad():
                    lps = _answer_logprobs(model, tokenizer, seqs).tolist()
                best: dict[int, tuple[float, int]] = {}
                for (row, a, _, _), lp in zip(seqs, lps, strict=True):
                    if row not in best or lp > best[row][0]:
                        best[row] = (lp, a)
                picks += [best[row][1] for row in range(len(chunk))]
        finally:
            if was_training:
                model.train()
        return picks

    return choose


def nash_conv(game_name: str, policy: Any) -> float:
    """OpenSpiel's exact NashConv of ``policy`` (0 at a Nash equilibrium; the uniform random
    policy scores 0.9167 in Kuhn poker, 4.747 in Leduc poker)."""
    from open_spiel.python.algorithms import exploitability

    return float(exploitability.nash_conv(load(game_name), policy))


def uniform_nash_conv(game_name: str) -> float:
    """NashConv of the uniform random policy (the line a trained policy must fall below)."""
    from open_spiel.python import policy as spiel_policy

    game = load(game_name)
    return nash_conv(game_name, spiel_policy.UniformRandomPolicy(game))


async def win_draw_loss(
    policy: Any,
    spec_game: str,
    base_url: str,
    *,
    opponent: str,
    games: int,
    seed: int = 0,
    temperature: float = 0.0,
    concurrency: int = 64,
    mask_illegal: bool = False,
) -> dict[str, dict[str, float]]:
    """Win/draw/loss shares of ``policy`` in each seat against ``opponent``, ``games`` games per
    seat, through the env server at ``base_url`` (one seat held per session). An unreadable
    answer is a loss; with ``mask_illegal`` the policy answers among the legal moves only."""
    from openenv_train.rollout.episode import RolloutConfig
    from openenv_train.rollout.selfplay import SelfPlayRunner

    from .client import OpenSpielEnv
    from .text_spec import SeatTextSpec

    out: dict[str, dict[str, float]] = {}
    config = RolloutConfig(max_turns=64, max_new_tokens=4, temperature=max(temperature, 1e-6))
    if temperature == 0.0:
        config = RolloutConfig(max_turns=64, max_new_tokens=4, temperature=0.0)
    for seat in (0, 1):
        clients = [OpenSpielEnv(base_url) for _ in range(min(concurrency, games))]
        for c in clients:
            await c.connect()
        runner = SelfPlayRunner(
            policy,
            SeatTextSpec(spec_game, mask_illegal=mask_illegal),
            clients,
            config=config,
            seed=seed + seat * 7_919,
            reset_kwargs={"seat": seat, "opponent": opponent},
        )
        try:
            played = await runner.play(games, 1)
        finally:
            await runner.aclose()
        rets = [g.returns[seat] for g in played]
        out[f"seat{seat}"] = {
            "win": sum(r > 0 for r in rets) / len(rets),
            "draw": sum(r == 0 for r in rets) / len(rets),
            "loss": sum(r < 0 for r in rets) / len(rets),
            "mean_return": sum(rets) / len(rets),
        }
    return out
