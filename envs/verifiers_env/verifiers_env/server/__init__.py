"""The verifiers env server: ``environment`` (one dataset row per episode) and ``apps`` (one app per env id)."""
