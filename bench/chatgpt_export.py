"""A deterministic ChatGPT export (conversations.json) of any size, for the import memory bench.

    .venv/bin/python bench/chatgpt_export.py 1000 /tmp/conversations.json

Shaped like a real export (FORMATS.md §2): a hidden system root node, user and
assistant messages linked by parent/children, a regenerated answer on a side
branch every tenth conversation (the importer must follow ``current_node``),
model slugs per assistant message, epoch timestamps. Text comes from the peer
corpus generator, so it is plain English.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import corpus_module  # noqa: E402


def _message(node_id: str, role: str, text: str, t: float, slug: str | None) -> dict:
    meta = {"model_slug": slug, "finish_details": {"type": "stop"}} if slug else {}
    return {
        "id": node_id, "author": {"role": role, "name": None, "metadata": {}}, "create_time": t, "update_time": None,
        "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully", "end_turn": True,
        "weight": 1.0, "metadata": meta, "recipient": "all", "channel": None,
    }


def conversation(rng: random.Random, corpus, index: int, exchanges: int = 10) -> dict:
    t = 1_700_000_000.0 + index * 3600
    slug = rng.choice(["gpt-4o", "gpt-4o", "gpt-4", "o1-mini"])
    root = f"c{index}-root"
    mapping = {root: {"id": root, "message": None, "parent": None, "children": []}}
    system = f"c{index}-sys"
    sys_msg = _message(system, "system", "", t, None)
    sys_msg["metadata"]["is_visually_hidden_from_conversation"] = True
    mapping[system] = {"id": system, "message": sys_msg, "parent": root, "children": []}
    mapping[root]["children"].append(system)
    parent = system
    for k in range(exchanges):
        q = f"c{index}-q{k}"
        question = " ".join(corpus._statement(rng) for _ in range(rng.randint(1, 3))) + " " + corpus._question(rng)
        mapping[q] = {"id": q, "message": _message(q, "user", question, t + 60 * k, None), "parent": parent, "children": []}
        mapping[parent]["children"].append(q)
        answer = " ".join(corpus._statement(rng) for _ in range(rng.randint(5, 15)))
        a = f"c{index}-a{k}"
        mapping[a] = {"id": a, "message": _message(a, "assistant", answer, t + 60 * k + 5, slug), "parent": q, "children": []}
        mapping[q]["children"].append(a)
        if index % 10 == 0 and k == 0:  # a regenerated answer left on a side branch
            alt = f"c{index}-a{k}-alt"
            mapping[alt] = {"id": alt, "message": _message(alt, "assistant", "An earlier draft. " + answer, t + 2, slug),
                            "parent": q, "children": []}
            mapping[q]["children"].insert(0, alt)
        parent = a
    return {
        "title": f"Conversation {index + 1}", "create_time": t, "update_time": t + 60 * exchanges, "mapping": mapping,
        "moderation_results": [], "current_node": parent, "plugin_ids": None, "conversation_id": f"conv-{index:05d}",
        "conversation_template_id": None, "gizmo_id": None, "is_archived": False, "safe_urls": [],
        "default_model_slug": slug, "id": f"conv-{index:05d}",
    }


def write_export(path: Path, conversations: int, seed: int = 7) -> int:
    """Write the export streaming, one conversation at a time; returns its size in bytes."""
    rng = random.Random(seed)
    corpus = corpus_module()
    with path.open("w", encoding="utf-8") as f:
        f.write("[")
        for i in range(conversations):
            if i:
                f.write(",")
            json.dump(conversation(rng, corpus, i), f)
        f.write("]")
    return path.stat().st_size


if __name__ == "__main__":
    size = write_export(Path(sys.argv[2]), int(sys.argv[1]))
    print(f"{sys.argv[2]}: {size / 1e6:.1f} MB")
