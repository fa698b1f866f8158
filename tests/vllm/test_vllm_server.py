"""OpenAICompatiblePolicy against a real vLLM OpenAI server (started and stopped by PID)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from vllm_helpers import EOS_PROMPT, bj_prompts, hf_logprobs

from openenv_train.policy import OpenAICompatiblePolicy, SamplingSettings

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server(tiny_dir, tmp_path_factory):
    port = _free_port()
    log_path = tmp_path_factory.mktemp("vllm_server") / "server.log"
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1")
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)  # the server runs its engine in a child
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_dir),
        "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port),
        "--max-model-len", "256", "--enforce-eager", "--dtype", "float32",
        "--logprobs-mode", "processed_logprobs", "--max-num-seqs", "32",
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"vLLM server exited {proc.returncode}:\n{log_path.read_text()[-3000:]}"
                )
            try:
                if httpx.get(base_url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"vLLM server not healthy in 240 s:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(1)
        yield base_url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        try:  # the engine child lives in the server's own session (process group = server PID)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def test_openai_policy_against_vllm_server(vllm_server, hf_pair, engine):
    model, tok = hf_pair
    policy = OpenAICompatiblePolicy(vllm_server, "tiny", tokenizer=tok)
    prompts = [tok.encode(EOS_PROMPT)] + bj_prompts(tok, 11, seed=8)
    try:
        greedy = await policy.generate(prompts, SamplingSettings(max_new_tokens=4, temperature=0))
        sampled = await policy.generate(
            prompts, SamplingSettings(max_new_tokens=3, temperature=0.8)
        )
    finally:
        await policy.aclose()
    local = await engine.generate(prompts, SamplingSettings(max_new_tokens=4, temperature=0))
    for prompt, g, loc in zip(prompts, greedy, local, strict=True):
        assert g.token_ids == loc.token_ids
        assert g.finish_reason == loc.finish_reason
        assert g.logprobs == pytest.approx(hf_logprobs(model, prompt, g.token_ids), abs=2e-3)
    assert greedy[0].token_ids == tok.encode("stand<eos>")  # vLLM keeps the EOS id
    assert (greedy[0].text, greedy[0].finish_reason) == ("stand", "stop")
    for prompt, s in zip(prompts, sampled, strict=True):
        assert 1 <= len(s.token_ids) <= 3
        assert s.logprobs == pytest.approx(hf_logprobs(model, prompt, s.token_ids, 0.8), abs=2e-3)
