#!/bin/bash
# Grade the work in /app; write the reward where Harbor reads it.
mkdir -p /logs/verifier
python3 - <<'EOF'
import json, os
exists = os.path.isfile("/app/reversed.txt")
lines = open("/app/reversed.txt").read().split() if exists else []
correct = lines == ["four", "three", "two", "one"]
first = bool(lines) and lines[0] == "four"
json.dump({"reward": 1.0 if correct else 0.0, "file_exists": float(exists), "first_line": float(first)}, open("/logs/verifier/reward.json", "w"))
EOF
