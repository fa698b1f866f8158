#!/bin/bash
# Grade the work in /app; write the reward where Harbor reads it.
mkdir -p /logs/verifier
python3 - <<'EOF'
def reward(ok):
    open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")

import subprocess
hidden = """import unittest

from calc import add, mul


class T(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5); self.assertEqual(add(-4, 9), 5)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)


if __name__ == '__main__':
    unittest.main()
"""
open("/tmp/test_hidden.py", "w").write(hidden)
r = subprocess.run(["python3", "-m", "unittest", "test_hidden"], cwd="/tmp", env={"PYTHONPATH": "/app", "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=30)
reward(r.returncode == 0)
EOF
