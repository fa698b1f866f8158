#!/bin/bash
# Grade the work in /app; write the reward where Harbor reads it.
mkdir -p /logs/verifier
python3 - <<'EOF'
def reward(ok):
    open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")

import os, subprocess
try:
    ok = os.access("/app/greet.sh", os.X_OK) and subprocess.run(["/app/greet.sh", "zed"], capture_output=True, text=True, timeout=10).stdout.strip() == "hi zed"
except Exception:
    ok = False
reward(ok)
EOF
