"""Coding env server: ``uvicorn coding_env.server.app:app``."""
