"""GRPO BlackJack recipe: ``openenv-train train configs/grpo_blackjack_cpu.yaml``."""
