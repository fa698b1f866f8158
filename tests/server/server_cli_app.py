"""An importable app for the ``python -m openenv_train.server`` test."""

from server_envs import AddAction, CounterEnv, CounterState, TotalObservation

from openenv_train.server import create_app

app = create_app(CounterEnv, AddAction, TotalObservation, CounterState)
