"""``python -m openenv_train.training.async_grpo CONFIG.yaml``: see ``run``."""

import sys

from .run import main

sys.exit(main())
