from openenv_train.core import Action, Observation, State
from openenv_train.server import Environment, NoEpisodeError, create_app


class AddAction(Action):
    n: int


class CountObservation(Observation):
    total: int = 0


class CounterEnv(Environment):
    """Add numbers until the total reaches 10; the reward is 1 for landing on 10 exactly."""

    def reset(self, seed=None, episode_id=None, **kwargs):
        self.total, self.steps = 0, 0
        return CountObservation(total=0)

    def step(self, action):
        if not hasattr(self, "total"):
            raise NoEpisodeError("no episode: call reset() first")
        self.total += action.n
        self.steps += 1
        done = self.total >= 10
        return CountObservation(total=self.total, done=done, reward=float(self.total == 10) if done else None)

    def state(self):
        return State(step_count=getattr(self, "steps", 0))


app = create_app(CounterEnv, AddAction, CountObservation)
