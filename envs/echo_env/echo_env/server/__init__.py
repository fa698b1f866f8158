"""Echo env server: ``uvicorn echo_env.server.app:app``."""
