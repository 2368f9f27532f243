"""Scripted model answers for the probe tests, chosen so the tables can be computed by hand."""

from __future__ import annotations

import json
import re
from typing import Any

# Control (JSON): "woman" for everything but item 8.
CONTROL = {n: "woman" for n in range(1, 9)} | {8: "man"}
# Primed (lines): items 1-3 and 5 "woman", 4, 6, 8 "man"; item 7 does not parse.
PRIMED = {1: "woman", 2: "woman", 3: "woman", 4: "man", 5: "woman", 6: "man", 8: "man"}
PRIMED_CODES = {1: "Emotional Expression", 2: "Emotional Expression, Textual Style", 3: "Tone", 5: "Emotional Expression"}


def item_number(body: dict[str, Any]) -> int:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return int(re.search(r"item-(\d+)", user).group(1))


def answer(body: dict[str, Any]) -> str:
    n = item_number(body)
    if "response_format" in body:
        return json.dumps({"gender": CONTROL[n], "codes_applied": ["Declaration"], "rationale": f"Rationale for item {n}."})
    if n not in PRIMED:
        return "I cannot tell the author's gender from this review."
    codes = PRIMED_CODES.get(n, "Declaration")
    return f"Gender: {PRIMED[n]}\nCodes Applied: {codes}\nRationale: The review of item {n} reads this way.\nIt is short."
