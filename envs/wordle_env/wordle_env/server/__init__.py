"""Wordle env server: ``uvicorn wordle_env.server.app:app``."""
