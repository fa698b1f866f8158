"""What the vLLM tests share beyond tests/support/tiny_models.py."""

from __future__ import annotations

#: The tiny_dir model is trained to answer this with ``stand<eos>``.
EOS_PROMPT = "player 20 hard dealer 6 action:"
