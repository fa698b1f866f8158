"""A scripted policy for the notes task (evaluation mode and demonstrations): it reads the
conversation it is given and answers with the next step a careful agent would take."""

from __future__ import annotations

import json
import re

_NOTES = re.compile(r"Read the notes \[([^\]]*)\]")


def _call(name: str, **arguments: object) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def scripted_answer(prompt: str) -> str:
    """The next assistant message for a conversation rendered as text (tool results in order)."""
    results = re.findall(r"<\|im_start\|>tool\n(.*?)<\|im_end\|>", prompt, flags=re.S)
    if not results:
        return _call("read_note", title="order")
    quantity, item = results[0].split(" ", 1) if " " in results[0] else ("0", "")
    if len(results) == 1:
        return _call("read_note", title=item.strip())
    if len(results) == 2:
        price = results[1].split()[-1]
        return _call("multiply", a=float(quantity), b=float(price))
    if len(results) == 3:
        return _call("submit", answer=float(results[2]))
    return "The order costs " + results[2] + "."
