"""The command line's exceptions: user mistakes (bad arguments, unknown recipe or config, a bad
``--set``) that ``main`` prints without a traceback, and a failed image build."""

from __future__ import annotations


class CLIError(Exception):
    """A user mistake on the command line; printed without a traceback, exit status 2."""


class OverrideError(ValueError):
    """A ``--set`` that is not ``KEY=VALUE``, or a ``--resume`` of a changed config."""


class RecipeError(LookupError):
    """No such recipe, or a recipe that does not follow the contract above."""


class UnknownConfigError(LookupError):
    """Neither a YAML file nor the name of a shipped config; the message lists the names."""


class BuildError(RuntimeError):
    """The image did not build; the message carries the failing step's output."""
