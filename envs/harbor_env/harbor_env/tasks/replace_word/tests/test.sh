#!/bin/bash
# Grade the work in /app; write the reward where Harbor reads it.
mkdir -p /logs/verifier
python3 - <<'EOF'
def reward(ok):
    open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")

try:
    ok = open("/app/notes.txt").read() == 'The color of the sky.\nA colorful color chart.\nNo change here.\n'
except OSError:
    ok = False
reward(ok)
EOF
