#!/bin/bash
# Grade the work in /app; write the reward where Harbor reads it.
mkdir -p /logs/verifier
python3 - <<'EOF'
def reward(ok):
    open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")

try:
    ok = open("/app/count.txt").read().strip() == "37"
except OSError:
    ok = False
reward(ok)
EOF
