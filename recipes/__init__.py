"""Training recipes, installed with the library: each reads a YAML config (see configs/).

A recipe is a package here with ``config.py`` (``load_config``), ``train.py`` (``run``) and
optionally ``evaluate.py`` (``evaluate_saved_model``), registered by name with one line in the
``openenv_train.recipes`` entry point group of pyproject.toml (``openenv_train.cli.recipes``).
"""
