"""trainers layer."""
