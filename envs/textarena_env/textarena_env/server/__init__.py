"""The textarena env server: ``environment`` (one game per episode) and ``apps`` (one app per game id)."""
