#!/usr/bin/env bash
# GPU smoke test of every GPU training path, a few steps each, with random-initialised real
# architectures (a small Qwen3 with a BPE tokenizer trained here and Qwen3's own chat template):
# no hub download. Prints one line per path: PASS/FAIL/SKIP, seconds, and the log to read.
#
#   scripts/gpu_smoke.sh            (needs the vllm extra: pip install -e '.[train,vllm]')
#
# Paths: (1) GRPO + vLLM colocate, (2) GRPO + vLLM server mode (trl vllm-serve, NCCL sync),
# (3) AsyncGRPOTrainer with NCCL weight sync, (4) AsyncGRPOTrainer + LoRA adapter-only sync
# (vLLM --enable-lora, adapters over HTTP), (5) the forge GPU config. NCCL cannot put two ranks
# on one device, so (2) and (3) need a second GPU and say SKIP on one; (4) needs none.
# Budget: under 10 minutes on one H200 (each path is capped by PATH_TIMEOUT seconds).
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python}"
WORK="$(mktemp -d /tmp/gpu_smoke.XXXXXX)"
PATH_TIMEOUT="${PATH_TIMEOUT:-150}"
GPUS="$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)"
SERVER_PID=""
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT
export TRL_EXPERIMENTAL_SILENCE=1

report() { printf '%-5s %-38s %5ss  %s\n' "$1" "$2" "$3" "$4"; }

if [ "$GPUS" -lt 1 ]; then
  report FAIL "gpu" 0 "no CUDA device visible to torch"
  exit 1
fi

# The model every path trains: Qwen3 architecture, 4 layers, width 256 (head size 64, 4 heads,
# 2 KV heads), random weights; and the YAML of each path, from the shipped GPU configs.
"$PY" - "$WORK" <<'EOF' || { report FAIL "model + configs" 0 "see above"; exit 1; }
import sys
from pathlib import Path

import yaml

from openenv_train.policy.chat_models import build_chat_model, save_chat_model

work = Path(sys.argv[1])
corpus = ["player 15 soft dealer A action: hit stand", "You play blackjack. Reply with exactly one word: hit or stand."]
model, tok = build_chat_model("qwen3", corpus, hidden_size=256, num_layers=4, num_heads=4,
                              num_kv_heads=2, intermediate_size=512, vocab_size=1000)
qwen = str(save_chat_model(model.to(dtype=__import__("torch").bfloat16), tok, work / "qwen3"))

def write(name, src, edit):
    data = yaml.safe_load(Path(src).read_text())
    edit(data)
    data.update(name=name, output_dir=str(work / "runs"))
    (work / f"{name}.yaml").write_text(yaml.safe_dump(data))

def small_grpo(d, mode):
    d["model"].update(path=qwen, hub=False, warmup_steps=0)
    d["env"]["num_servers"] = 2
    d["grpo"].update(max_steps=3, per_device_train_batch_size=32, num_generations=8,
                     vllm_mode=mode, logging_steps=1, max_completion_length=64)
    if mode == "server":
        d["grpo"]["extra"] = {"vllm_server_base_url": "http://127.0.0.1:8001"}
    d["eval"].update(hands=200, periodic_hands=200, every=3)

write("colocate", "configs/grpo_blackjack_qwen3_vllm.yaml", lambda d: small_grpo(d, "colocate"))
write("server", "configs/grpo_blackjack_qwen3_vllm.yaml", lambda d: small_grpo(d, "server"))

def small_async(d, lora):
    d["model"].update(path=qwen, hub=False)
    d["env"]["num_servers"] = 2
    d["trainer"].update(max_steps=3, per_device_train_batch_size=16, gradient_accumulation_steps=1,
                        logging_steps=1, max_completion_length=64)
    d["vllm"]["base_url"] = "http://127.0.0.1:8000"
    d["worker"]["max_inflight_groups"] = 4
    if lora:
        d["lora"] = {"r": 8, "alpha": 16, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}

write("async_nccl", "configs/grpo_blackjack_async_vllm.yaml", lambda d: small_async(d, False))
write("async_lora", "configs/grpo_blackjack_async_vllm.yaml", lambda d: small_async(d, True))
print(f"model and configs in {work}")
EOF

run_path() {  # NAME LOG COMMAND...: PASS when the command exits 0 within PATH_TIMEOUT
  local name="$1" log="$2"; shift 2
  local t0=$SECONDS
  if timeout "$PATH_TIMEOUT" "$@" >"$log" 2>&1; then
    report PASS "$name" $((SECONDS - t0)) "$log"
  else
    report FAIL "$name" $((SECONDS - t0)) "$log: $(tail -n 1 "$log" | cut -c1-120)"
  fi
}

start_vllm() {  # GPU PORT LOG EXTRA_ARGS...: a vLLM OpenAI server of the smoke model
  local gpu="$1" port="$2" log="$3"; shift 3
  CUDA_VISIBLE_DEVICES="$gpu" VLLM_SERVER_DEV_MODE=1 VLLM_ALLOW_RUNTIME_LORA_UPDATING=1 \
    "$PY" -m vllm.entrypoints.openai.api_server --model "$WORK/qwen3" --served-model-name policy \
    --dtype bfloat16 --host 127.0.0.1 --port "$port" --logprobs-mode processed_logprobs \
    --max-model-len 1024 --gpu-memory-utilization 0.3 "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || return 1
    sleep 1
  done
  return 1
}

stop_vllm() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""; }

# (1) vLLM colocate: generation inside the trainer's process, weights shared in memory
run_path "grpo vllm colocate" "$WORK/colocate.log" \
  "$PY" -m openenv_train train "$WORK/colocate.yaml"

# (2) vLLM server mode: trl vllm-serve on GPU 1, the trainer on GPU 0, NCCL weight sync
if [ "$GPUS" -ge 2 ]; then
  CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model "$WORK/qwen3" --port 8001 \
    --gpu-memory-utilization 0.3 --max-model-len 1024 >"$WORK/trl_serve.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 120); do curl -sf http://127.0.0.1:8001/health/ >/dev/null && break; sleep 1; done
  run_path "grpo vllm server (NCCL)" "$WORK/server.log" \
    env CUDA_VISIBLE_DEVICES=0 "$PY" -m openenv_train train "$WORK/server.yaml"
  stop_vllm
else
  report SKIP "grpo vllm server (NCCL)" 0 "needs 2 GPUs: NCCL puts trainer and server on separate devices"
fi

# (3) AsyncGRPOTrainer, full weights over NCCL
if [ "$GPUS" -ge 2 ]; then
  if start_vllm 1 8000 "$WORK/vllm_nccl.log" --weight-transfer-config '{"backend":"nccl"}'; then
    run_path "async grpo NCCL weight sync" "$WORK/async_nccl.log" \
      env CUDA_VISIBLE_DEVICES=0 "$PY" -m openenv_train train "$WORK/async_nccl.yaml"
  else
    report FAIL "async grpo NCCL weight sync" 0 "vLLM server did not start: $WORK/vllm_nccl.log"
  fi
  stop_vllm
else
  report SKIP "async grpo NCCL weight sync" 0 "needs 2 GPUs: NCCL puts trainer and server on separate devices"
fi

# (4) AsyncGRPOTrainer + LoRA: adapter-only sync (the server loads each version's adapter)
LORA_GPU=$([ "$GPUS" -ge 2 ] && echo 1 || echo 0)
if start_vllm "$LORA_GPU" 8000 "$WORK/vllm_lora.log" --enable-lora --max-lora-rank 8 --max-loras 8 \
    --weight-transfer-config '{"backend":"nccl"}'; then
  run_path "async grpo LoRA adapter sync" "$WORK/async_lora.log" \
    env CUDA_VISIBLE_DEVICES=0 "$PY" -m openenv_train train "$WORK/async_lora.yaml"
  grep -q "Adapter-only vLLM sync enabled" "$WORK/async_lora.log" \
    || report FAIL "  (adapter-only sync was not chosen)" 0 "$WORK/async_lora.log"
else
  report FAIL "async grpo LoRA adapter sync" 0 "vLLM server did not start: $WORK/vllm_lora.log"
fi
stop_vllm

# (5) the forge GPU config (torchforge is not on PyPI: installed from its repository)
if "$PY" -c "import forge" 2>/dev/null; then
  run_path "forge gpu config" "$WORK/forge.log" \
    "$PY" -m openenv_train train configs/forge_grpo_blackjack_gpu.yaml --max-steps 3 --name forge_smoke
else
  report SKIP "forge gpu config" 0 "torchforge is not installed (pip install from github.com/meta-pytorch/torchforge)"
fi
echo "logs: $WORK"
