"""An app module that fails at import, as a broken env server would."""

print("rt_broken_app: loading config", flush=True)
raise RuntimeError("rt_broken_app: database url missing (this line must reach the error message)")
