"""The harbor env's errors. Everything that is the machinery's fault (the engine, a build, a
container that died, a verifier that wrote no reward) is an ``InfrastructureError``: the rollout
layer retries or drops it and never scores it 0. The client turns these back into the same
types from the server's error frame (``exception_type``)."""

from __future__ import annotations

from openenv_train import InfrastructureError


class TaskInfraError(InfrastructureError):
    """A task container could not be built, started or driven (engine error, died mid-episode)."""


class ImageBuildError(TaskInfraError):
    """The task's ``environment/Dockerfile`` did not build; the message holds the log's tail."""


class VerifierError(TaskInfraError):
    """``tests/test.sh`` wrote no usable reward file (missing, empty, not a number, not finite)
    or ran past ``[verifier] timeout_sec``: the task is broken, the agent is not scored."""


#: The names the client maps back to these classes.
INFRA_ERRORS: dict[str, type[TaskInfraError]] = {
    cls.__name__: cls for cls in (TaskInfraError, ImageBuildError, VerifierError)
}
