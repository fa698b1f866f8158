"""GRPO BlackJack with TRL's AsyncGRPOTrainer on a vLLM server: ``openenv-train train configs/grpo_blackjack_async_vllm.yaml``."""
