"""Guess-the-number env server: ``uvicorn guess_number_env.server.app:app``."""
