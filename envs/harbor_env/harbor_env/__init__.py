"""Harbor task env: ``from harbor_env import HarborClient, load_tasks, SHIPPED_TASKS``."""

from .client import HarborClient
from .errors import ImageBuildError, TaskInfraError, VerifierError
from .models import HarborObservation, HarborState
from .runtime import SHIPPED_TASKS, TaskRuntime
from .task import HarborTask, TaskFormatError, load_task, load_tasks

__all__ = [
    "SHIPPED_TASKS",
    "HarborClient",
    "HarborObservation",
    "HarborState",
    "HarborTask",
    "ImageBuildError",
    "TaskFormatError",
    "TaskInfraError",
    "TaskRuntime",
    "VerifierError",
    "load_task",
    "load_tasks",
]
