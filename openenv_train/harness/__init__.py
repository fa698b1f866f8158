"""harness layer."""
