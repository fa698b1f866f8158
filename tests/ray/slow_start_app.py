"""BlackJack's app, started ``OPENENV_TRAIN_TEST_SLOW_START_S`` seconds late while the file
named by ``OPENENV_TRAIN_TEST_SLOW_FLAG`` exists: a server a loaded node starts slowly."""

import os
import time

from blackjack_env.server.app import app

if os.path.exists(os.environ.get("OPENENV_TRAIN_TEST_SLOW_FLAG", "")):
    time.sleep(float(os.environ.get("OPENENV_TRAIN_TEST_SLOW_START_S", "0")))

__all__ = ["app"]
