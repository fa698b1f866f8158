"""The viewer's Starlette app: the page, its static files and a read-only JSON API per run."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from .live import read_live

STATIC = Path(__file__).parent / "static"
_SERVER_STATIC = Path(__file__).parents[2] / "server" / "web" / "static"
#: the only files served besides the API (name -> (folder, media type))
_FILES = {
    "viewer.js": (STATIC, "text/javascript"),
    "chart.js": (STATIC, "text/javascript"),
    "viewer.css": (STATIC, "text/css"),
    "common.css": (_SERVER_STATIC, "text/css"),
}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSONL file; a last line still being written is skipped."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def resume_command(run: Path) -> str:
    """The command that continues ``run`` from its last checkpoint (its saved config)."""
    config = run / "config.json"
    return f"openenv-train train {shlex.quote(str(config))} --resume {shlex.quote(str(run))}"


def run_files(run: Path) -> dict[str, Any]:
    """What the page shows about one run besides curves and episodes."""
    return {
        "name": run.name,
        "path": str(run),
        "config": read_json(run / "config.json"),
        "summary": read_json(run / "summary.json"),
        "baselines": read_json(run / "baselines.json"),
        "resume": resume_command(run),
        "trajectory_steps": trajectory_steps(run),
    }


def trajectory_steps(run: Path) -> list[int]:
    folder = run / "trajectories"
    if not folder.is_dir():
        return []
    steps = []
    for f in folder.glob("step_*.jsonl"):
        try:
            steps.append(int(f.stem.removeprefix("step_")))
        except ValueError:
            continue
    return sorted(steps)


def api_answers(runs: list[Path]) -> dict[str, Any]:
    """What each ``/api`` URL answers now, by URL: the page's first view, sent with the page."""
    out: dict[str, Any] = {
        "/api/runs": [{"id": i, "name": r.name, "path": str(r)} for i, r in enumerate(runs)]
    }
    for i, run in enumerate(runs):
        out[f"/api/runs/{i}"] = run_files(run)
        out[f"/api/runs/{i}/metrics"] = read_jsonl(run / "metrics.jsonl")
        out[f"/api/runs/{i}/episodes"] = run_episodes(run)
    return out


def preloaded_page(runs: list[Path]) -> str:
    """The page with the runs' data inline, so its first view draws without waiting on a fetch
    (later refreshes fetch the API)."""
    data = json.dumps(api_answers(runs)).replace("</", "<\\/")  # no early </script>
    tag = f'<script id="preload" type="application/json">{data}</script>\n'
    html = (STATIC / "viewer.html").read_text()
    return html.replace(
        '<script src="/static/chart.js">', tag + '<script src="/static/chart.js">', 1
    )


def run_episodes(run: Path) -> list[dict[str, Any]]:
    """Every recorded eval episode of ``run``, in step order."""
    rows: list[dict[str, Any]] = []
    for step in trajectory_steps(run):
        rows += read_jsonl(run / "trajectories" / f"step_{step:06d}.jsonl")
    return rows


def create_viewer(
    runs: list[Path], live: Sequence[str] = (), token: str | None = None
) -> Starlette:
    """The app over ``runs`` (run folders); run ``i`` of the API is ``runs[i]``. ``live``: the
    base URLs of env servers (or a trainer's ``metrics_port``) whose ``/metrics`` the Live tab
    shows, read with ``token``."""
    live_urls = list(live)
    for run in runs:
        if not run.is_dir():
            raise ValueError(f"{run} is not a folder; give run folders, e.g. runs/<name>")
        if not (run / "metrics.jsonl").is_file() and not (run / "config.json").is_file():
            raise ValueError(
                f"{run} holds no metrics.jsonl or config.json: not a training run folder "
                "(openenv-train train writes them under output_dir/name)"
            )

    def pick(request: Request) -> Path:
        index = int(request.path_params["run"])
        if not 0 <= index < len(runs):
            raise IndexError(index)
        return runs[index]

    async def index(_request: Request) -> Response:
        return HTMLResponse(preloaded_page(runs))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _FILES:
            return Response(status_code=404)
        folder, media = _FILES[name]
        return FileResponse(folder / name, media_type=media)

    async def list_runs(_request: Request) -> Response:
        return JSONResponse([{"id": i, "name": r.name, "path": str(r)} for i, r in enumerate(runs)])

    async def info(request: Request) -> Response:
        return JSONResponse(run_files(pick(request)))

    async def metrics(request: Request) -> Response:
        return JSONResponse(read_jsonl(pick(request) / "metrics.jsonl"))

    async def episodes(request: Request) -> Response:
        return JSONResponse(run_episodes(pick(request)))

    async def live_figures(_request: Request) -> Response:
        return JSONResponse(await read_live(live_urls, token) if live_urls else [])

    async def not_found(_request: Request, _exc: Exception) -> Response:
        return JSONResponse({"error": "no such run"}, status_code=404)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/static/{name}", static),
            Route("/api/runs", list_runs),
            Route("/api/runs/{run:int}", info),
            Route("/api/runs/{run:int}/metrics", metrics),
            Route("/api/runs/{run:int}/episodes", episodes),
            Route("/api/live", live_figures),
        ],
        exception_handlers={IndexError: not_found},
    )
