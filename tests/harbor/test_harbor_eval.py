"""``openenv-train eval URL --k K --env harbor``: pass@k over a folder of Harbor tasks with a
model behind an OpenAI-compatible endpoint (our policy endpoint serving a scripted policy that
solves half the tasks), through the catalog's text spec and the rollout engine."""

from __future__ import annotations

import json
import re

from harbor_env import TaskRuntime
from harbor_env.family import WORDS, write_family
from harbor_support import BASE_IMAGE

from openenv_train.cli.main import main
from openenv_train.policy.tiny import build_chatml_tokenizer
from openenv_train.rollout import ScriptedPolicy
from openenv_train.rollout.policy_endpoint import PolicyEndpoint

SOLVED = ("apple", "river")  # the scripted agent gets these right, and writes "wrong" otherwise


def agent(prompt: str) -> str:
    if "wrote" in prompt:
        return "done"  # no tool call: submit
    word = re.findall(r"create the file (\w+)", prompt)[-1]
    path = word if word in SOLVED else "wrong"
    call = {"name": "write_file", "arguments": {"path": path, "content": "ok"}}
    return f"<tool_call>{json.dumps(call)}</tool_call>"


def register_catalog_entry(folder) -> None:
    """The harbor env's catalog entry point, as installing the package registers it."""
    info = folder / "openenv_train_harbor_env-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: openenv-train-harbor-env\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[openenv_train.envs]\nharbor = harbor_env.catalog:CATALOG_ENTRY\n"
    )


def test_eval_reports_pass_at_k_over_a_task_folder_from_an_endpoint(
    tmp_path, monkeypatch, capsys, built
) -> None:
    tasks = write_family(tmp_path / "tasks")
    TaskRuntime(tasks, base_image=BASE_IMAGE).build_all()
    monkeypatch.setenv("HARBOR_TASKS", str(tasks))
    monkeypatch.setenv("HARBOR_BASE_IMAGE", BASE_IMAGE)
    site = tmp_path / "site"
    site.mkdir()
    register_catalog_entry(site)
    monkeypatch.syspath_prepend(str(site))
    texts = [agent(f"create the file {w}") for w in WORDS] + [
        "done wrote 2 bytes to create the file"
    ]
    tok = build_chatml_tokenizer(texts)
    tok.save_pretrained(tmp_path / "tok")
    with PolicyEndpoint(ScriptedPolicy(tok, agent), "scripted") as endpoint:
        code = main(
            [
                "eval",
                endpoint.base_url,
                "--served-model",
                "scripted",
                "--tokenizer",
                str(tmp_path / "tok"),
                "--env",
                "harbor",
                "--k",
                "2",
                "--tasks",
                str(len(WORDS)),
                "--max-turns",
                "3",
                "--max-new-tokens",
                "64",
                "--json",
                "--trajectories",
                str(tmp_path / "traj.jsonl"),
                "--result",
                str(tmp_path / "r.json"),
            ]
        )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    scores = report["envs"]["harbor"]
    assert (scores["tasks"], scores["k"]) == (4, 2)
    assert scores["pass@1"] == scores["pass@2"] == scores["mean@2"] == 0.5
    rows = [json.loads(line) for line in (tmp_path / "traj.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and sorted(r["reward"] for r in rows) == [0.0] * 4 + [1.0] * 4
    assert json.loads((tmp_path / "r.json").read_text())["scores"]["harbor"] == scores
