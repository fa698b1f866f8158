"""The ``openspiel/<game>`` family: its members, the built-in opponents, rewards per seat."""

from __future__ import annotations

import math
import random

import pytest
from openspiel_games_env import GameAction
from openspiel_games_env.catalog import FAMILY, entry
from openspiel_games_env.evaluation import exact_vs_random
from openspiel_games_env.games import FEATURED, game_names, load
from openspiel_games_env.opponents import make_opponent, position_key, solved_values
from openspiel_games_env.server.environment import OpenSpielEnvironment

from openenv_train.catalog import EnvEntry, UnknownEnvError


def test_members_are_the_two_player_string_games() -> None:
    names = FAMILY.members()
    assert set(FEATURED) <= set(names) and len(names) >= 40
    for name in ("kuhn_poker", "liars_dice", "chess", "go"):
        assert load(name).num_players() == 2
    e = FAMILY.entry("connect_four")
    assert isinstance(e, EnvEntry) and e.name == "openspiel/connect_four"
    assert e.app.endswith(":connect_four") and e.client().__name__ == "OpenSpielEnv"
    with pytest.raises(UnknownEnvError, match="openspiel/<game>"):
        entry("matching_pennies_3p")
    assert "blotto" not in game_names()  # simultaneous moves: not a seated turn game


@pytest.mark.parametrize("game", FEATURED)
def test_every_featured_game_plays_to_the_end_in_both_modes(game: str) -> None:
    env = OpenSpielEnvironment(game)
    obs = env.reset(seed=3)
    while not obs.done:
        assert obs.seat == obs.current_player and obs.text and obs.moves
        obs = env.step(GameAction(move=obs.moves[len(obs.moves) // 2]))
    assert len(obs.rewards) == 2 and obs.rewards == env.state.returns
    assert sum(obs.rewards) == pytest.approx(0)  # all five are zero-sum
    obs = env.reset(seed=3, seat=1, opponent="scripted")
    while not obs.done:
        assert obs.current_player == 1
        obs = env.step(GameAction(move=obs.moves[0]))
    assert obs.reward == obs.rewards[1]


def test_a_seed_replays_chance_and_opponents_exactly() -> None:
    a, b = OpenSpielEnvironment("leduc_poker"), OpenSpielEnvironment("leduc_poker")
    for env in (a, b):
        obs = env.reset(seed=9, seat=0, opponent="solver")
        while not obs.done:
            obs = env.step(GameAction(move=obs.moves[-1]))
    assert a.state.history == b.state.history and a.state.returns == b.state.returns
    replay = OpenSpielEnvironment("leduc_poker")
    obs = replay.reset(seed=9, seat=0, opponent="solver", moves=obs.my_moves)
    assert obs.done and replay.state.history == a.state.history


def test_openings_start_a_seed_s_games_from_one_random_position() -> None:
    env = OpenSpielEnvironment("tic_tac_toe")
    starts = {}
    for seed in range(6):
        obs = env.reset(seed=seed, seat=1, opponent="scripted", openings=3)
        assert env.state.openings == 3 and obs.current_player == 1 and not obs.done
        assert len(env.state.history) == 3  # x, o, x at random, then o (the held seat) moves
        starts[seed] = obs.text
        again = env.reset(seed=seed, seat=1, opponent="scripted", openings=3)
        assert again.text == obs.text  # the seed's games share the start
    assert len(set(starts.values())) > 1  # seeds draw different starts
    # never a finished game, nor one the next mover could end at once: both seats still move
    for seed in range(20):
        obs = env.reset(seed=seed, openings=1_000)
        assert not obs.done and len(env.state.history) >= 4
        for move in obs.moves:
            after = env.reset(seed=seed, openings=1_000, moves=[move])
            assert not after.done, (obs.text, move)
    # a stateless replay takes the openings back
    obs = env.reset(seed=4, seat=0, opponent="random", openings=2)
    first = obs.moves[0]
    after = env.step(GameAction(move=first))
    replay = OpenSpielEnvironment("tic_tac_toe")
    replayed = replay.step(
        GameAction(move=first), seed=4, seat=0, opponent="random", openings=2, moves=[]
    )
    assert replayed.text == after.text and replay.state.history == env.state.history
    with pytest.raises(ValueError, match="openings must be an integer 0..1000"):
        env.reset(seed=0, openings=-1)


def test_scripted_takes_a_win_and_blocks_a_loss() -> None:
    game = load("tic_tac_toe")
    scripted = make_opponent("scripted", "tic_tac_toe", game, random.Random(0))
    state = game.new_initial_state()
    for a in (0, 3, 1, 4):  # x: 0, 1; o: 3, 4 -> x to move wins at 2
        state.apply_action(a)
    assert scripted(state) == 2
    state = game.new_initial_state()
    for a in (0, 4, 1):  # x threatens 2; o must block
        state.apply_action(a)
    assert scripted(state) == 2


def _play(game: str, seat: int, opponent: str, games: int, pick) -> list[float]:
    env = OpenSpielEnvironment(game)
    rng = random.Random(seat)
    out = []
    for seed in range(games):
        obs = env.reset(seed=seed, seat=seat, opponent=opponent)
        while not obs.done:
            obs = env.step(GameAction(move=pick(obs, rng)))
        out.append(obs.reward)
    return out


def test_solver_and_scripted_beat_random_play() -> None:
    rand = lambda obs, rng: rng.choice(obs.moves)  # noqa: E731
    for seat in (0, 1):
        vs_solver = _play("tic_tac_toe", seat, "solver", 12, rand)
        vs_scripted = _play("tic_tac_toe", seat, "scripted", 40, rand)
        vs_random = _play("tic_tac_toe", seat, "random", 40, rand)
        assert max(vs_solver) <= 0  # random play never beats the MCTS-Solver
        assert sum(vs_scripted) < sum(vs_random)
    # the Kuhn solver (CFR+) holds its own: random play loses chips to it on average
    assert sum(_play("kuhn_poker", 0, "solver", 400, rand)) < 0


def test_punisher_wins_every_won_game_and_otherwise_plays_at_random() -> None:
    rand = lambda obs, rng: rng.choice(obs.moves)  # noqa: E731
    game = load("tic_tac_toe")
    # x on the centre, o on an edge: a game o has lost, however it plays on
    for seed in range(60):
        punisher, rng = (
            make_opponent("punisher", "tic_tac_toe", game, random.Random(seed)),
            random.Random(seed),
        )
        state = game.new_initial_state()
        for a in (4, 1):
            state.apply_action(a)
        while not state.is_terminal():
            state.apply_action(
                punisher(state)
                if state.current_player() == 0
                else rng.choice(state.legal_actions())
            )
        assert state.returns()[0] == 1
    # where its game is not won it is random play: random play beats it sometimes, which the
    # solver never allows (test above)
    for seat in (0, 1):
        returns = _play("tic_tac_toe", seat, "punisher", 200, rand)
        assert max(returns) == 1 and sum(returns) < 0


def test_punisher_refuses_games_it_cannot_solve_exactly() -> None:
    for game in ("connect_four", "kuhn_poker"):
        with pytest.raises(ValueError, match="opponent 'punisher'.*'solver' or 'scripted'"):
            OpenSpielEnvironment(game).reset(seat=0, opponent="punisher")


def test_solver_refuses_big_hidden_information_games() -> None:
    env = OpenSpielEnvironment("liars_dice")
    with pytest.raises(ValueError, match="opponent 'solver'.*random"):
        env.reset(seat=0, opponent="solver")


def _expected_vs_random(state, seat: int, choose) -> float:
    """The loss probability by plain recursion, one state at a time (what the walk must equal)."""
    if state.is_terminal():
        return float(state.returns()[seat] < 0)
    if state.current_player() == seat:
        return _expected_vs_random(state.child(choose([state])[0]), seat, choose)
    legal = state.legal_actions()
    return sum(_expected_vs_random(state.child(a), seat, choose) for a in legal) / len(legal)


def test_exact_play_against_random_sums_every_game_it_can_make() -> None:
    values = solved_values("tic_tac_toe")

    def perfect(states):  # keeps the game's value: never loses
        out = []
        for s in states:
            sign = 1 if s.current_player() == 0 else -1
            out.append(
                max(s.legal_actions(), key=lambda a: sign * values[position_key(s.child(a))])
            )
        return out

    first = lambda states: [s.legal_actions()[0] for s in states]  # noqa: E731
    game = load("tic_tac_toe")
    for seat in (0, 1):
        exact = exact_vs_random("tic_tac_toe", seat, first)
        assert math.isclose(sum(exact.values()), 1.0)
        expected = _expected_vs_random(game.new_initial_state(), seat, first)
        assert exact["loss"] > 0.1 and math.isclose(exact["loss"], expected)
        best = exact_vs_random("tic_tac_toe", seat, perfect)
        assert best["loss"] == 0.0 and best["win"] > exact["win"]
    with pytest.raises(ValueError, match="kuhn_poker is not one: count sampled games"):
        exact_vs_random("kuhn_poker", 0, first)
