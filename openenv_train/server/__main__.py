"""``python -m openenv_train.server module:app --port N``: see :func:`openenv_train.server.serve.main`."""

from .serve import main

main()
