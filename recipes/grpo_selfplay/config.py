"""Typed config of the self-play GRPO recipe: the shared sections plus ``game`` (which
``openspiel/<game>``) and ``selfplay`` (GRPO groups per seat, role-conditioned advantages, a pool
of past checkpoints as opponents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from openenv_train.training import config, config_loader
from openenv_train.training.config import RunName

#: the games whose words the tiny model's tokenizer knows (any other needs model.path)
TINY_GAMES = ("kuhn_poker", "tic_tac_toe")


class GameSection(config.StrictModel):
    #: the OpenSpiel game (openspiel/<name> in the env catalog)
    name: str = "kuhn_poker"


class EnvSection(config.LocalEnvSection):
    #: the env server app (default: the game's own app)
    app: str = "openspiel_games_env.server.apps:kuhn_poker"
    #: env server processes to start
    num_servers: int = Field(1, ge=1)


class SelfPlaySection(config.StrictModel):
    """How the policy plays itself. ``advantages``: ``group`` compares each seat's games of the
    same deal (GRPO groups per seat and start state); ``role`` compares each seat's games of the
    whole batch (one baseline per seat: role-conditioned advantages; num_generations is then set
    to per_device_train_batch_size / 2). ``pool_share`` of the groups is played against a past
    checkpoint (one of the last ``pool_size``, snapshotted every ``pool_every`` steps).

    With ``group``, ``grpo.scale_rewards`` defaults to ``batch``: a group of one deal often has
    nearly equal rewards, and dividing by its own small standard deviation blows their few
    differences up (the policy collapsed to near-pure play, NashConv 0.39-0.46)."""

    #: group: a baseline per seat and deal; role: a baseline per seat (over the batch)
    advantages: Literal["group", "role"] = "role"
    #: share of GRPO groups played against a past checkpoint (0: pure self-play)
    pool_share: float = Field(0.0, ge=0, le=1)
    #: past checkpoints kept
    pool_size: int = Field(4, ge=1)
    #: optimizer steps between snapshots
    pool_every: int = Field(25, ge=1)
    #: share of GRPO groups played against the env server's built-in opponent (each seat's
    #: rows from games where the server holds the other seat)
    builtin_share: float = Field(0.0, ge=0, le=1)
    #: those opponents, one drawn per group: random, scripted (wins, else avoids a move that
    #: lets the other win at once), solver, or punisher (wins every game it is handed, exactly,
    #: else plays at random; small deterministic games such as tic-tac-toe)
    builtin_opponents: list[Literal["random", "scripted", "solver", "punisher"]] = Field(
        default_factory=lambda: ["random"], min_length=1
    )
    #: training games start after 0..openings random moves (drawn per group; the evals start
    #: from the empty board): groups compare answers from positions all through the game
    openings: int = Field(0, ge=0, le=1000)
    #: share of GRPO groups that play again, per seat, a game the policy lost against a
    #: built-in opponent, from one of the seat's positions in it (needs builtin_share > 0)
    replay_share: float = Field(0.0, ge=0, le=1)
    #: lost games kept per seat for replay_share (the oldest go first)
    replay_size: int = Field(512, ge=1)
    #: in a replayed group, the seat's first answer after the given ones goes through the legal
    #: moves (game k of the group plays the k-th) instead of being sampled: a move the policy
    #: no longer samples there is still tried and compared (needs mask_illegal)
    replay_explore: bool = False
    #: a lost game's return is multiplied by this in training (the evals and metrics keep the
    #: game's own): above 1, a seat gives up a chance to win to avoid a chance to lose. For a game
    #: that must never be lost (tic-tac-toe against anyone); a zero-sum poker game keeps 1
    loss_weight: float = Field(1.0, ge=1.0, le=100.0)
    #: answers limited to the legal moves' words in training and evals (no illegal move is
    #: sampled; the logprobs stay the model's own)
    mask_illegal: bool = False
    #: concurrent games (sessions)
    concurrency: int = Field(256, ge=1)
    #: every answer sampled from its own stream (the seed, batch, game and seat): a seed repeats
    #: its run exactly, whatever order the games' replies come in (about 2 ms of CPU per
    #: 512-answer policy call). Off by default: Kuhn's documented runs were measured without it
    repeatable: bool = False


class RolloutSection(config.EngineSection):
    #: answers per seat before a game is cut
    max_turns: int = Field(8, ge=1)
    #: tokens per answer (a word and <eos>)
    max_new_tokens: int = Field(2, ge=1)


class GRPOSection(config.GRPOSection):
    max_steps: int = Field(1500, ge=1)
    num_generations: int = 16
    #: rows per step: games x 2 seats
    per_device_train_batch_size: int = 512
    learning_rate: float = Field(2e-4, gt=0)
    #: linear: to 0 at max_steps, so the late policies, which weigh most in the average, settle
    lr_scheduler_type: str = "linear"
    #: KL to the warmed-up model: keeps the policy mixed (at 0.02 or 0 it collapsed to one pure
    #: strategy and stayed there, NashConv 0.33-0.67)
    beta: float = Field(0.1, ge=0)
    use_adaptive_entropy: bool = False
    max_completion_length: int = Field(32, ge=1)


class EvalSection(config.EvalSection):
    """Exact NashConv where OpenSpiel can walk the tree (poker games), and greedy win/draw/loss
    per seat against the built-in ``opponents`` through the env server."""

    every: int = Field(10, ge=1)
    #: games per seat per opponent (greedy) of the evals before and after training
    games: int = Field(200, ge=1)
    #: the same, for each periodic eval (the curve; many of them, so fewer games)
    periodic_games: int = Field(20, ge=1)
    #: built-in opponents of the win/draw/loss evals
    opponents: list[Literal["random", "scripted", "solver", "punisher"]] = Field(
        default_factory=lambda: ["random", "solver"]
    )
    #: exact NashConv of the policy (small games only: the whole tree is walked)
    nash_conv: bool = True
    #: also the exact win/draw/loss of greedy play against a random player in each seat, every
    #: game it can make walked (small deterministic games such as tic-tac-toe; needs
    #: selfplay.mask_illegal): a loss rate of 1e-4 is told apart from 0, which 1,000 games cannot.
    #: Without nash_conv, keep_best then keeps the periodic eval whose seats lose least (exactly)
    exact_random: bool = False
    #: with nash_conv: also the NashConv of the run's average policy (every periodic eval's
    #: policy from this step on, reach-weighted, as CFR and fictitious play average)
    average_from: int = Field(100, ge=0)
    #: uniform: every policy in the average counts the same; linear: the k-th counts k (CFR+'s
    #: averaging: the early, far-off policies fade)
    average_weighting: Literal["uniform", "linear"] = "linear"
    #: at the end, fit the model to that average policy (one model that plays it) before the
    #: final evals (after_last); with keep_best: false (the default here) it is model/
    distill_average: bool = True
    #: distillation steps (Adam on the answers' cross-entropy at every information state)
    distill_steps: int = Field(150, ge=1)
    #: false: model/ is the distilled average (the policy the run converges to), not the best
    #: single periodic eval
    keep_best: bool = False


class RecipeConfig(config.RunConfig):
    """``openenv-train train configs/grpo_selfplay_kuhn_cpu.yaml`` loads this from YAML."""

    example: ClassVar[str] = "configs/grpo_selfplay_kuhn_cpu.yaml"
    recipe: Literal["grpo_selfplay"] = "grpo_selfplay"
    name: RunName = "grpo_selfplay_kuhn"
    game: GameSection = Field(default_factory=GameSection)
    model: config.ModelSection = Field(default_factory=config.ModelSection)
    env: EnvSection = Field(default_factory=EnvSection)
    selfplay: SelfPlaySection = Field(default_factory=SelfPlaySection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    eval: EvalSection = Field(default_factory=EvalSection)

    @model_validator(mode="after")
    def _fits(self) -> RecipeConfig:
        g = self.grpo
        if self.selfplay.advantages == "group" and "scale_rewards" not in g.model_fields_set:
            g.scale_rewards = "batch"  # see SelfPlaySection: a deal's own std is too small
        if g.per_device_train_batch_size % 2:
            raise ValueError(
                "grpo.per_device_train_batch_size: rows are games x 2 seats; use an even number"
            )
        if (
            self.selfplay.advantages == "group"
            and (g.per_device_train_batch_size // 2) % g.num_generations
        ):
            raise ValueError(
                "grpo.num_generations must divide per_device_train_batch_size / 2 (each seat's "
                "rows of a step split into groups of games with the same deal)"
            )
        if self.selfplay.replay_share and not self.selfplay.builtin_share:
            raise ValueError(
                "selfplay.replay_share replays games lost against a built-in opponent: set "
                "selfplay.builtin_share > 0 too"
            )
        if self.selfplay.replay_explore and not (
            self.selfplay.replay_share and self.selfplay.mask_illegal
        ):
            raise ValueError(
                "selfplay.replay_explore goes through the legal moves of replayed positions: set "
                "selfplay.replay_share > 0 and selfplay.mask_illegal: true too"
            )
        if self.eval.exact_random and not self.selfplay.mask_illegal:
            raise ValueError(
                "eval.exact_random scores the legal answers only (the masked greedy play): set "
                "selfplay.mask_illegal: true too"
            )
        asked = "distill_average" in self.eval.model_fields_set  # on by default, where it can be
        if asked and self.eval.distill_average and not self.eval.nash_conv:
            raise ValueError("eval.distill_average needs eval.nash_conv: true (the tabular policy)")
        if self.model.path is None and self.game.name not in TINY_GAMES:
            raise ValueError(
                f"game.name: the tiny model knows the words of {', '.join(TINY_GAMES)} only; "
                "give model.path (a model with a real tokenizer) for other games"
            )
        return self


def parse_config(data: Any) -> RecipeConfig:
    """A checked config from a dict; raises ``ConfigError`` naming the key."""
    return config_loader.parse_config(data, RecipeConfig)


def load_config(path: str | Path) -> RecipeConfig:
    """Load and check ``configs/grpo_selfplay_kuhn_cpu.yaml``-style YAML."""
    return config_loader.load_config(path, RecipeConfig)
