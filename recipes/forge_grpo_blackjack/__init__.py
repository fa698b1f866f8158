"""GRPO BlackJack as a torchforge app on Monarch actors: ``openenv-train train configs/forge_grpo_blackjack_cpu.yaml``."""
