"""The OpenSpiel games server: ``environment`` (one game per session) and ``apps`` (one app per game)."""
