"""The reasoning-gym env server: ``environment`` (one task per episode) and ``apps`` (one app per dataset)."""
