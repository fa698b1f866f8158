"""BlackJack env server: ``uvicorn blackjack_env.server.app:app``."""
