"""What the GRPO recipes share: start-time checks, the model and warm-up, the TRL wiring and the
run folder's lifecycle (interrupt, checkpoints, resume)."""
