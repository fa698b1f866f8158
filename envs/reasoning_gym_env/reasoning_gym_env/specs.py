"""One ``ReasoningGymSpec`` class per dataset, ``reasoning_gym_env.specs:<dataset>``: the catalog
entry's ``text_spec_path``, so a spec built from the env's name alone (``Spec(seed=0)``) knows
its dataset."""

from __future__ import annotations

import functools
from typing import Any

from .names import dataset_names
from .text_spec import ReasoningGymSpec


@functools.cache
def spec_for(dataset: str) -> type[ReasoningGymSpec]:
    """``ReasoningGymSpec`` with ``dataset`` fixed."""

    class DatasetSpec(ReasoningGymSpec):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(dataset, **kwargs)

    DatasetSpec.__name__ = DatasetSpec.__qualname__ = f"ReasoningGymSpec_{dataset}"
    return DatasetSpec


def __getattr__(name: str) -> Any:
    if name.startswith("__") or name not in dataset_names():
        raise AttributeError(name)
    return spec_for(name)
