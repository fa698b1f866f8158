"""Typed config of the generic text-env GRPO recipe: the shared sections, with the env named by
config (``env.app``, ``env.spec``) and the vocabulary taken from the spec or the config.

Everything is checked at load, before the run folder or the model exists: the env app's module,
the spec class (imported and built with ``env.spec_kwargs``), a vocabulary for the tiny model and
a ``random_episode`` for the format warm-up.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from openenv_train.training import config, config_loader
from openenv_train.training.checks import import_target
from openenv_train.training.config import ConfigError, RunName

SPEC_EXAMPLE = "my_env.text_spec:MyEnvSpec"


class ModelSection(config.ModelSection):
    """``vocabulary``: the words of the tiny model's tokenizer (``null``: the spec's own
    ``vocabulary``); not used with ``path``."""

    #: format warm-up batches on the spec's random_episode games (0: none)
    warmup_steps: int = Field(200, ge=0)
    #: the tiny tokenizer's words (null: the spec's `vocabulary`); not used with model.path
    vocabulary: list[str] | None = None


class EnvSection(config.MixtureEnvSection):
    """``app``: the env server (``module:attribute``); ``spec``: its ``TextEnvSpec`` subclass
    (``module:Class``), built with ``spec_kwargs``; or ``mixture``: several such envs with
    weights, learned at once (``configs/grpo_mixture_cpu.yaml``)."""

    #: the env server app, module:attribute (imported from the current folder, like uvicorn)
    app: str = "openenv_train.recipes.grpo_text.countdown:app"
    #: env server processes (or containers) to start
    num_servers: int = Field(1, ge=1)
    #: the env's TextEnvSpec subclass, module:Class (prompt, render, parse_action, vocabulary)
    spec: str = "openenv_train.recipes.grpo_text.countdown:CountdownSpec"
    #: keyword arguments the spec class is built with
    spec_kwargs: dict[str, Any] = Field(default_factory=dict)


class RolloutSection(config.RolloutSection):
    #: model turns per episode before it is cut (truncated)
    max_turns: int = Field(10, ge=1)
    #: tokens per model answer (countdown answers one word; raise it for longer answers)
    max_new_tokens: int = Field(2, ge=1)


class GRPOSection(config.GRPOSection):
    #: optimizer steps
    max_steps: int = Field(60, ge=1)
    #: episodes per GRPO group
    num_generations: int = 8
    #: episodes per step (a multiple of num_generations)
    per_device_train_batch_size: int = 128
    #: AdamW learning rate
    learning_rate: float = Field(3e-4, gt=0)
    #: transformers scheduler name (constant, cosine, linear, ...)
    lr_scheduler_type: str = "constant"


class EvalSection(config.EvalSection):
    """Greedy play through the env servers: ``episodes`` games before and after training,
    ``periodic_episodes`` every ``every`` steps (the curve; validation games seeded apart)."""

    #: periodic greedy eval every this many optimizer steps (the learning curve)
    every: int = Field(20, ge=1)
    #: greedy games before and after training
    episodes: int = Field(256, ge=1)
    #: validation games per periodic eval (keep_best picks on these)
    periodic_episodes: int = Field(128, ge=1)


@dataclass(frozen=True)
class Member:
    """One env of the run: its name, its env section (servers, spec) and sampling weight."""

    name: str
    section: Any
    weight: float = 1.0


def env_label(app: str) -> str:
    """A short name of a single env: the catalog name of its app (``blackjack``), else from its
    app path (``openenv_train.recipes.grpo_text.countdown:app`` -> ``countdown``)."""
    from openenv_train.catalog import name_of_app

    found = name_of_app(app)
    if found is not None:
        return found
    parts = app.split(":")[0].split(".")
    return parts[-1] if parts[-1] not in ("app", "server") else parts[0]


class TextRecipeConfig(config.RunConfig):
    """``openenv-train train configs/grpo_text_countdown.yaml`` loads this from YAML."""

    example: ClassVar[str] = "configs/grpo_text_countdown.yaml"
    #: the recipe that runs this config
    recipe: Literal["grpo_text"] = "grpo_text"
    #: run name: everything lands in output_dir/name (--name overrides)
    name: RunName = "grpo_text"
    #: weight of a format reward (-1 for an answer the spec cannot parse) beside the env's reward; 0: none
    format_reward_weight: float = 0.0
    #: the policy model
    model: ModelSection = Field(default_factory=ModelSection)
    #: the env servers and the env's text spec
    env: EnvSection = Field(default_factory=EnvSection)
    #: the rollout engine
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    #: TRL GRPOConfig settings
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    #: greedy evaluation
    eval: EvalSection = Field(default_factory=EvalSection)

    @property
    def mixture(self) -> bool:
        """True when ``env.mixture`` names several envs."""
        return bool(self.env.mixture)

    def members(self) -> list[Member]:
        """The envs of the run: the ``env.mixture`` members, else the env section itself."""
        if self.env.mixture:
            return [Member(m.name, m, m.weight) for m in self.env.mixture]
        return [Member(env_label(self.env.app), self.env)]

    def check_start(self) -> None:
        super().check_start()
        if self.mixture and self.rollout.max_staleness:
            raise ConfigError(
                "rollout.max_staleness: an env mixture plays its batches synchronously; set it to 0"
            )
        for i, member in enumerate(self.members()):
            if self.mixture:
                env = member.section  # base_urls: they must answer at start (checks.py)
                if not env.base_urls and env.runtime in ("local", "ray"):
                    try:
                        import_target(env.app, f"env.mixture[{i}].app", "my_env.server.app:app")
                    except ValueError as err:
                        raise ConfigError(str(err)) from None
            self.check_member(member)

    def check_member(self, member: Member) -> None:
        """The member's spec builds, the tiny model's vocabulary covers its texts and it has
        games to warm up on (when asked)."""
        spec = self.make_spec(member)
        self.check_seats(spec)
        m = self.model
        if m.path is None and not (m.vocabulary or getattr(spec, "vocabulary", ())):
            raise ConfigError(
                f"model.vocabulary: the tiny model needs the env's words; set `vocabulary` on "
                f"{type(spec).__name__} or list them here, or give model.path"
            )
        if m.path is None:
            self.check_vocabulary(spec)
        if m.warmup_steps and self.warmup_episodes(spec) is None:
            raise ConfigError(
                f"model.warmup_steps: {type(spec).__name__} has no random_episode(rng) to warm "
                "up on; add one (README: Train GRPO on your own env) or set model.warmup_steps: 0"
            )

    def check_seats(self, spec: Any) -> None:
        """A self-play spec (the policy in every seat) plays in a mixture, dealt one group per
        seat at a time; alone, its recipe is ``grpo_selfplay``."""
        from openenv_train.rollout.seated_game import seats_of

        seats = seats_of(spec)
        if seats < 2:
            return
        name = type(spec).__name__
        if not self.mixture:
            raise ConfigError(
                f"env.spec: {name} plays every seat (self-play); train it alone with the "
                "grpo_selfplay recipe (configs/grpo_selfplay_kuhn_cpu.yaml), or beside other envs "
                "in env.mixture"
            )
        g = self.grpo
        if (g.per_device_train_batch_size // g.num_generations) % seats:
            raise ConfigError(
                f"grpo.per_device_train_batch_size: {name} is dealt {seats} groups at a time (one "
                f"per seat), so per_device_train_batch_size / num_generations "
                f"({g.per_device_train_batch_size} / {g.num_generations}) must be a multiple of "
                f"{seats}"
            )

    def check_vocabulary(self, spec: Any, games: int = 32) -> None:
        """Every word of the spec's own texts (the system prompt, ``random_episode`` games) is in
        the tiny model's vocabulary: a missing one would silently become ``<unk>``."""
        from openenv_train.policy.tiny import missing_words

        texts = [self.rollout.system_prompt or ""]
        sample = self.warmup_episodes(spec)
        if sample is not None:
            for i in range(games):
                texts += [text for _, text in sample(random.Random(self.seed + i))]
        missing = missing_words(self.vocabulary(spec), texts)
        if missing:
            where = (
                "model.vocabulary" if self.model.vocabulary else f"{type(spec).__name__}.vocabulary"
            )
            words = ", ".join(repr(w) for w in missing[:20])
            more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
            raise ConfigError(
                f"{where}: the env's texts use {words}{more}, which the vocabulary lacks (the tiny "
                f"model would read each as <unk>); add them to {where}"
            )

    def make_spec(self, member: Member | None = None, **overrides: Any) -> Any:
        """The ``TextEnvSpec`` of ``member`` (default: the env section's own), built from its
        ``spec`` and ``spec_kwargs``."""
        from openenv_train.rollout.spec import TextEnvSpec

        env = self.env if member is None else member.section
        key = "env" if member is None or not self.mixture else f"env.mixture[{member.name}]"
        try:
            cls = import_target(env.spec, f"{key}.spec", SPEC_EXAMPLE)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        if not (isinstance(cls, type) and issubclass(cls, TextEnvSpec)):
            raise ConfigError(
                f"{key}.spec: {env.spec!r} is not a TextEnvSpec subclass; name the class "
                f"(e.g. {SPEC_EXAMPLE})"
            )
        try:
            return cls(**{**env.spec_kwargs, **overrides})
        except TypeError as err:
            raise ConfigError(f"{key}.spec_kwargs: {cls.__name__}(...) failed: {err}") from None

    def warmup_sampler(self) -> Any:
        """``random_episode(rng)`` of the run: the env's own, or for a mixture one that draws
        the member by weight first (the warm-up sees every env's format)."""
        members = self.members()
        samplers = [self.warmup_episodes(self.make_spec(m)) for m in members]
        if len(members) == 1:
            return samplers[0]
        weights = [m.weight for m in members]

        def sample(rng: random.Random) -> Any:
            return rng.choices(samplers, weights=weights)[0](rng)

        return sample

    @staticmethod
    def warmup_episodes(spec: Any) -> Any:
        """The spec's ``random_episode(rng)``, or one beside the spec class in its module."""
        found = getattr(spec, "random_episode", None)
        if found is None:
            found = getattr(sys.modules.get(type(spec).__module__), "random_episode", None)
        return found if callable(found) else None

    def vocabulary(self, spec: Any = None) -> list[str]:
        """The tiny model's words: ``model.vocabulary``, else the spec's (``spec`` given), else
        every member env's, in order (a mixture's model reads all of them)."""
        if self.model.vocabulary:
            return list(self.model.vocabulary)
        specs = [spec] if spec is not None else [self.make_spec(m) for m in self.members()]
        words: dict[str, None] = {}
        for s in specs:
            words.update((w, None) for w in getattr(s, "vocabulary", ()))
        return list(words)


def parse_config(data: Any) -> TextRecipeConfig:
    """A checked :class:`TextRecipeConfig` from a dict; raises ``ConfigError`` naming the key."""
    return config_loader.parse_config(data, TextRecipeConfig)


def load_config(path: str | Path) -> TextRecipeConfig:
    """Load and check a YAML config (``configs/grpo_text_countdown.yaml`` is the example)."""
    return config_loader.load_config(path, TextRecipeConfig)
