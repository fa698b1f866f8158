"""GRPO by self-play on a two-player OpenSpiel game: one model in every seat, exact NashConv evals."""
