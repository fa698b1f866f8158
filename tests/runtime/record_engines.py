"""Records what Docker and Podman answer, for the unit tests' fixtures (run it by hand).

    .venv/bin/python tests/runtime/record_engines.py IMAGE

Starts one hardened container per engine and writes, per engine: the ``inspect`` answer, the
``/containers/json`` listing by ``^NAME$`` and by ``^/NAME$``, ``/proc/1/status``, ``/version``,
and the status + body of the not-found error after removal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from openenv_train.runtime import ContainerProvider
from openenv_train.runtime import container_engine as ce

OUT = Path(__file__).parent / "recorded"


def record(engine: str, image: str) -> dict:
    with ContainerProvider(image, engine=engine, name=f"openenv-train-rec-{engine}") as p:
        api = p._client.api
        rec = {
            "version": api.version(),
            "inspect": api.inspect_container(p.name),
            "list_exact": api.containers(all=True, filters={"name": [f"^{p.name}$"]}),
            "list_slash": api.containers(all=True, filters={"name": [f"^/{p.name}$"]}),
            "proc_status": p._client.containers.get(p.name)
            .exec_run(["cat", "/proc/1/status"])[1]
            .decode(),
            "name": p.name,
        }
        client = p._client
    try:
        client.api.inspect_container(rec["name"])
    except Exception as e:
        rec["not_found"] = {"status": ce.status_code(e), "body": e.response.json()}
    rec["list_after_remove"] = client.api.containers(
        all=True, filters={"name": [f"^{rec['name']}$"]}
    )
    return rec


if __name__ == "__main__":
    for engine in ("docker", "podman"):
        rec = record(engine, sys.argv[1])
        major = str(rec["version"]["Version"]).split(".")[0]
        path = OUT / f"{engine}{major}.json"
        path.write_text(json.dumps(rec, indent=1, sort_keys=True, default=str) + "\n")
        print("wrote", path)
