"""A tiny external harness: drives a session over JSON lines on stdin/stdout (CLIHarnessAdapter).

It reads the task, lists the tools, echoes the task's last word through ``echo_message`` and
exits. ``--fail`` exits with code 3 after listing tools; ``--garbage`` sends a bad line first.
"""

import json
import sys


def ask(rid, method, params=None):
    sys.stdout.write(json.dumps({"id": rid, "method": method, "params": params or {}}) + "\n")
    sys.stdout.flush()
    reply = json.loads(sys.stdin.readline())
    assert reply["id"] == rid, reply
    return reply


def main():
    if "--garbage" in sys.argv:
        sys.stdout.write("not json\n")
        sys.stdout.flush()
        bad = json.loads(sys.stdin.readline())
        assert "bad request line" in bad["error"]["message"], bad
    messages = ask(1, "initial_messages")["result"]
    tools = [t["name"] for t in ask(2, "tools/list")["result"]]
    if "--fail" in sys.argv:
        print("harness crashed on purpose", file=sys.stderr)
        sys.exit(3)
    assert "echo_message" in tools, tools
    word = messages[-1]["content"].split()[-1]
    result = ask(3, "tools/call", {"name": "echo_message", "arguments": {"message": word}})[
        "result"
    ]
    assert result["data"] == word and result["error"] is None, result
    unknown = ask(4, "nope")
    assert "unknown method" in unknown["error"]["message"], unknown


if __name__ == "__main__":
    main()
