#!/bin/bash
# Grade the work in /app; write the reward where Harbor reads it.
mkdir -p /logs/verifier
python3 - <<'EOF'
def reward(ok):
    open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")

import subprocess
want = "\n".join("FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else str(i) for i in range(1, 16))
try:
    ok = subprocess.run(["python3", "/app/fizzbuzz.py"], capture_output=True, text=True, timeout=10).stdout.strip() == want
except Exception:
    ok = False
reward(ok)
EOF
