"""OpenEnv's rubric API (RFC 004), written from its documented behaviour and run against both
openenv-train and OpenEnv 0.10 (the ``api`` fixture), so a rubric written for one runs on the
other. Then what is ours only: rubrics in envs served by our server, and the same rubric as a
TRL reward function.
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest

from openenv_train import Action, Environment, Observation, State, Transform, create_app
from openenv_train.core import rubrics
from openenv_train.judge import LLMJudge
from openenv_train.server import CompositeTransform, NullTransform
from openenv_train.training import make_rubric_reward


def _oe_api() -> types.SimpleNamespace:
    rubrics = pytest.importorskip("openenv.core.rubrics")
    return types.SimpleNamespace(**{n: getattr(rubrics, n) for n in rubrics.__all__})


def _our_api() -> types.SimpleNamespace:
    names = [
        "Rubric",
        "Sequential",
        "Gate",
        "WeightedSum",
        "RubricList",
        "RubricDict",
        "TrajectoryRubric",
        "ExponentialDiscountingTrajectoryRubric",
    ]
    return types.SimpleNamespace(LLMJudge=LLMJudge, **{n: getattr(rubrics, n) for n in names})


@pytest.fixture(params=["openenv_train", "openenv"])
def api(request: pytest.FixtureRequest) -> types.SimpleNamespace:
    return _our_api() if request.param == "openenv_train" else _oe_api()


def const(api: Any, value: float, calls: list[str] | None = None, name: str = "") -> Any:
    class Const(api.Rubric):
        def forward(self, action: Any, observation: Any) -> float:
            if calls is not None:
                calls.append(name)
            return value

    return Const()


def slow(api: Any, value: float, gate: asyncio.Event, other: asyncio.Event) -> Any:
    """An async child that finishes only after ``other`` started: proves concurrent awaiting."""

    class Waits(api.Rubric):
        async def forward(self, action: Any, observation: Any) -> float:
            gate.set()
            await other.wait()
            return value

    return Waits()


class FakeJudgeClient:
    """A local stand-in for an LLM endpoint (no model on this machine is needed): answers with a
    canned text and records the prompts it was asked."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        self.prompts.append(prompt)
        return self.answer


# ---- the API, on both implementations ------------------------------------------------------


def test_forward_hooks_last_score_and_children(api: Any) -> None:
    class Parent(api.Rubric):
        def __init__(self) -> None:
            super().__init__()
            self.syntax = const(api, 1.0)
            self.tests = const(api, 0.5)

        def forward(self, action: Any, observation: Any) -> float:
            return self.syntax(action, observation) * self.tests(action, observation)

    seen: list[Any] = []
    parent = Parent()
    parent.register_forward_pre_hook(lambda r, a, o: seen.append(("pre", a)))
    parent.register_forward_hook(lambda r, a, o, s: seen.append(("post", s)))
    assert parent("act", "obs") == 0.5
    assert seen == [("pre", "act"), ("post", 0.5)]
    assert parent.last_score == 0.5 and parent.tests.last_score == 0.5
    assert [n for n, _ in parent.named_children()] == ["syntax", "tests"]
    assert parent.get_rubric("tests") is parent.tests
    with pytest.raises(KeyError, match="nope"):
        parent.get_rubric("tests.nope")


def test_weighted_sum_gate_and_sequential(api: Any) -> None:
    ws = api.WeightedSum([const(api, 1.0), const(api, 0.5)], weights=[0.6, 0.4])
    assert ws(None, None) == pytest.approx(0.8)
    assert ws.weights == [0.6, 0.4]
    with pytest.raises(ValueError, match="sum to 1"):
        api.WeightedSum([const(api, 1.0)], weights=[0.5])
    with pytest.raises(ValueError, match="must match"):
        api.WeightedSum([const(api, 1.0)], weights=[0.5, 0.5])

    assert api.Gate(const(api, 0.4), threshold=0.5)(None, None) == 0.0
    assert api.Gate(const(api, 0.7), threshold=0.5)(None, None) == 0.7

    calls: list[str] = []
    seq = api.Sequential(const(api, 0.0, calls, "a"), const(api, 1.0, calls, "b"))
    assert seq(None, None) == 0.0 and calls == ["a"]  # fail-fast: "b" never ran
    assert api.Sequential(const(api, 0.3), const(api, 0.9))(None, None) == 0.9
    assert len(seq) == 2 and [n for n, _ in seq.named_rubrics()] == ["rubric_0", "rubric_1"]


def test_list_and_dict_containers(api: Any) -> None:
    games = api.RubricDict({"pong": const(api, 0.25), "chess": const(api, 1.0)})
    assert "pong" in games and len(games) == 2 and games["chess"](None, None) == 1.0
    assert list(games.keys()) == ["pong", "chess"]
    with pytest.raises(NotImplementedError):
        games(None, None)
    items = api.RubricList([const(api, 0.1)])
    items.append(const(api, 0.2))
    assert len(items) == 2 and [r(None, None) for r in items] == [0.1, 0.2]


async def test_async_children_are_awaited_concurrently(api: Any) -> None:
    first, second = asyncio.Event(), asyncio.Event()
    ws = api.WeightedSum([slow(api, 1.0, first, second), slow(api, 0.0, second, first)], [0.5, 0.5])
    pending = ws(None, None)
    assert asyncio.iscoroutine(pending) or hasattr(pending, "__await__")
    # each child waits for the other to start: awaiting one after the other would never finish
    assert await asyncio.wait_for(pending, timeout=30) == 0.5
    gated = api.Gate(slow(api, 0.9, asyncio.Event(), _set()), threshold=0.95)
    assert await gated(None, None) == 0.0


def _set() -> asyncio.Event:
    ev = asyncio.Event()
    ev.set()
    return ev


async def test_llm_judge_with_a_fake_judge_client(api: Any) -> None:
    client = FakeJudgeClient("I would say 0.8 out of 1")
    judge = api.LLMJudge("Rate {action} given {observation}. Score:", client)
    assert await judge("print(1)", "ok") == 0.8
    assert client.prompts == ["Rate print(1) given ok. Score:"]
    client.answer = "no number here"
    assert await api.LLMJudge("{action}", client, default_score=0.25)("a", "o") == 0.25
    client.answer = "7"
    assert await api.LLMJudge("{action}", client)("a", "o") == 1.0  # clamped to [0, 1]
    assert await api.LLMJudge("{action}", client, normalize=False)("a", "o") == 7.0
    assert judge.state_dict()["prompt_template"].startswith("Rate")


def test_trajectory_rubric_scores_at_done_and_discounts(api: Any) -> None:
    class WinLoss(api.ExponentialDiscountingTrajectoryRubric):
        def score_trajectory(self, trajectory: list[tuple[Any, Any]]) -> float:
            return 1.0 if trajectory[-1][1].metadata.get("won") else 0.0

    rubric = WinLoss(gamma=0.5)
    assert rubric("a1", Observation()) == 0.0
    assert rubric("a2", Observation(done=True, metadata={"won": True})) == 1.0
    assert rubric.compute_step_rewards() == [0.5, 1.0]
    rubric.reset()
    assert rubric.trajectory == [] and rubric.compute_step_rewards() == []
    with pytest.raises(ValueError, match="gamma"):
        WinLoss(gamma=1.5)


# ---- rubrics in envs (ours) ----------------------------------------------------------------


class GuessAction(Action):
    guess: int


class GuessObservation(Observation):
    feedback: str = ""


class ExactGuess(rubrics.Rubric):
    def forward(self, action: GuessAction, observation: GuessObservation) -> float:
        return 1.0 if action.guess == 7 else 0.0


class Closeness(rubrics.Rubric):
    def forward(self, action: GuessAction, observation: GuessObservation) -> float:
        return max(0.0, 1.0 - abs(action.guess - 7) / 10)


class Shout(Transform[GuessObservation]):
    def __call__(self, observation: GuessObservation) -> GuessObservation:
        observation.feedback = observation.feedback.upper()
        return observation


class GuessEnv(Environment[GuessAction, GuessObservation, State]):
    """Written the OpenEnv way: rubric and transform given to ``Environment.__init__``."""

    def __init__(self) -> None:
        super().__init__(
            transform=Shout(),
            rubric=rubrics.WeightedSum([ExactGuess(), Closeness()], [0.5, 0.5]),
        )
        self._state = State(step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> GuessObservation:
        self._reset_rubric()
        self._state = State(step_count=0)
        return GuessObservation(feedback="guess")

    def step(self, action: GuessAction) -> GuessObservation:
        self._state.step_count += 1
        obs = GuessObservation(feedback="high" if action.guess > 7 else "low", done=True)
        obs.reward = self._apply_rubric(action, obs)
        return self._apply_transform(obs)

    @property
    def state(self) -> State:
        return self._state


def test_environment_init_defaults_and_helpers() -> None:
    class Bare(Environment):
        pass

    env = Bare()
    assert env.transform is None and env.rubric is None
    assert env._apply_rubric(None, Observation()) == 0.0  # no rubric: 0.0, as OpenEnv
    obs = Observation()
    assert env._apply_transform(obs) is obs
    guess = GuessEnv()
    step = guess.step(GuessAction(guess=9))
    assert step.reward == pytest.approx(0.5 * 0.0 + 0.5 * 0.8) and step.feedback == "HIGH"
    assert dict(guess.rubric.named_rubrics()).keys() == {"rubric_0", "rubric_1"}


async def test_async_rubric_in_an_env_via_apply_rubric_async() -> None:
    judge = LLMJudge("{action}", judge=lambda prompt: "0.75")
    env = Environment(rubric=judge)
    assert await env._apply_rubric_async("a", Observation()) == 0.75
    await env._reset_rubric_async()


async def test_served_env_reward_is_the_rubric_score(serve_app: Any) -> None:
    from openenv_train.client import GenericEnvClient

    server = serve_app(create_app(GuessEnv, GuessAction, GuessObservation, State))
    async with GenericEnvClient(server.url) as client:
        await client.reset()
        result = await client.step({"guess": 7})
    assert result.reward == 1.0 and result.observation["feedback"] == "LOW"


# ---- the same rubric as a TRL reward function (ours) ---------------------------------------


def test_rubric_as_trl_reward_function() -> None:
    rubric = rubrics.WeightedSum([ExactGuess(), Closeness()], [0.5, 0.5])
    reward = make_rubric_reward(
        rubric,
        to_action=lambda text, columns: GuessAction(guess=int(text.strip())),
        name="guess_rubric",
    )
    assert reward.__name__ == "guess_rubric"
    scores = reward(["7", [{"role": "assistant", "content": "9"}]], prompts=["p", "p"])
    assert scores == pytest.approx([1.0, 0.4])


def test_async_judge_rubric_as_trl_reward_reads_row_columns() -> None:
    asked: list[str] = []

    async def fake_judge(prompt: str) -> str:  # a local stand-in for an LLM judge
        asked.append(prompt)
        return "1" if "Paris" in prompt else "0"

    judge = LLMJudge("{action} | expected {observation.answer}", judge=fake_judge)
    reward = make_rubric_reward(judge)
    scores = reward(["Paris", "Rome"], answer=["Paris", "Paris"], env_reward=[0.0, 0.0])
    assert scores == [1.0, 1.0] and asked[1] == "Rome | expected Paris"
    with pytest.raises(ValueError, match="exactly one of client= .* or judge="):
        LLMJudge("{action}")


async def test_a_harness_env_verifier_can_be_a_rubric() -> None:
    """The harness env's turn verifier takes the same ``Rubric`` objects (one reward idea)."""
    from openenv_train.agents.agentic import HarnessResponse
    from openenv_train.agents.harness_env import HarnessAction, HarnessEnvironment

    class SaysDone(rubrics.Rubric):
        async def forward(self, action: Any, observation: Any) -> float:
            return 1.0 if "done" in observation.response else 0.0

    env = HarnessEnvironment(adapter=None, rubric=SaysDone())  # type: ignore[arg-type]
    turn = HarnessAction(message="finish it")
    assert await env.score_turn(turn, HarnessResponse(response="all done")) == 1.0
    env.rubric = lambda action, response, env_: 0.5  # a plain three-argument verifier still works
    assert await env.score_turn(turn, HarnessResponse(response="x")) == 0.5


def test_composite_and_null_transforms_apply_in_order() -> None:
    class Mark(Transform[GuessObservation]):
        def __call__(self, observation: GuessObservation) -> GuessObservation:
            observation.feedback += "!"
            return observation

    both = CompositeTransform([Mark(), Shout(), NullTransform()])
    assert both(GuessObservation(feedback="low")).feedback == "LOW!"
    assert NullTransform()(GuessObservation(feedback="x")).feedback == "x"
