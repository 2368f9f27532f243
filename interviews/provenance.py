"""Provenance shown on the transcript page: where an interview and each turn came from.

Live turns store the chat-completions record under ``metadata["provenance"]``
(conduct/client.py); imported turns keep what their export said (model slug,
timestamps, branch info). These helpers pick the facts a reader checks and
leave the full record to the per-turn JSON view.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from interviews.models import Interview, Turn

Item = tuple[str, str]

# Request parameters worth showing; messages are the transcript itself.
REQUEST_PARAMS = ("model", "temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "reasoning_effort")
TOKEN_KINDS: tuple[Item, ...] = (("prompt_tokens", "prompt"), ("completion_tokens", "completion"), ("total_tokens", "total"))
# Keys of an imported turn's metadata that other fields already show or that are bulky.
SKIP_IMPORTED = {"model", "created_at", "provenance", "failure", "previous_attempts", "raw", "content", "branch"}


def when(value: dt.datetime) -> str:
    """A timestamp as researchers cite it: UTC, to the second."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _dict(value: Any) -> dict[str, Any]:
    # Imported metadata is whatever the export held; never let its shape break the page.
    return value if isinstance(value, dict) else {}


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and value != ""


def turn_provenance(turn: Turn) -> list[Item]:
    """(label, value) pairs for one turn, most useful first."""
    meta = _dict(turn.metadata)
    live = _dict(meta.get("provenance"))
    items: list[Item] = []
    if turn.model_slug:
        items.append(("Model", turn.model_slug))
    if turn.timestamp:
        items.append(("Time", when(turn.timestamp)))
    if live:
        items += _live_items(live)
    failure = meta.get("failure") or live.get("failure")
    if isinstance(failure, dict):
        items.append(("Failure", f"{failure.get('kind', '')}: {failure.get('message', '')}".strip(": ")))
    if isinstance(meta.get("previous_attempts"), list) and meta["previous_attempts"]:
        items.append(("Earlier attempts", str(len(meta["previous_attempts"]))))
    branch = _branch(meta.get("branch"), turn.speaker)
    if branch:
        items.append(("Branch", branch))
    for key, value in meta.items():
        if key not in SKIP_IMPORTED and _scalar(value):
            items.append((key.replace("_", " ").capitalize(), str(value)))
    return items


def _branch(value: Any, speaker: str) -> str:
    """Where a turn sits among the regenerated or edited alternatives of its export, e.g. "answer 2 of 3".

    The parsers store ``{"index": 0-based, "alternatives": n}``; anything else an export
    put under the key is left to the full JSON record.
    """
    branch = _dict(value)
    index, total = branch.get("index"), branch.get("alternatives")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (index, total)) or not 0 <= index < total:
        return ""
    # An interviewer turn with siblings is an edited question; a participant's, a regenerated answer.
    kind = {"participant": "answer", "interviewer": "question version"}.get(speaker, "version")
    return f"{kind} {index + 1} of {total}"


def request_parameters(request: dict[str, Any]) -> str:
    """The sampling parameters a request set, e.g. "temperature=0.7, seed=42" (empty when none)."""
    return ", ".join(f"{k}={request[k]}" for k in REQUEST_PARAMS if k in request and k != "model")


def token_counts(usage: dict[str, Any], kinds: tuple[Item, ...]) -> str:
    """Reported token usage, e.g. "512 prompt, 128 completion" (only the kinds the provider reported)."""
    return ", ".join(f"{usage[k]} {label}" for k, label in kinds if k in usage)


def _live_items(p: dict[str, Any]) -> list[Item]:
    items: list[Item] = []
    if p.get("model_requested") and p.get("model_requested") != p.get("model_returned"):
        items.append(("Model requested", str(p["model_requested"])))
    request = _dict(p.get("request"))
    params = request_parameters(request)
    if params:
        items.append(("Parameters", params))
    if isinstance(request.get("messages"), list):
        items.append(("Messages sent", str(len(request["messages"]))))
    usage = _dict(p.get("usage"))
    if usage:
        items.append(("Tokens", token_counts(usage, TOKEN_KINDS)))
    if p.get("latency_ms") is not None:
        first = p.get("time_to_first_token_ms")
        items.append(("Latency", f"{p['latency_ms']} ms" + (f" (first token {first} ms)" if first is not None else "")))
    if p.get("finish_reason"):
        items.append(("Finish reason", str(p["finish_reason"])))
    for key, label in (("response_id", "Response id"), ("system_fingerprint", "System fingerprint"),
                       ("base_url", "Endpoint"), ("started_at", "Started"), ("finished_at", "Finished"), ("client", "Client")):
        if p.get(key):
            items.append((label, str(p[key])))
    if isinstance(p.get("attempts"), list) and len(p["attempts"]) > 1:
        items.append(("Attempts", str(len(p["attempts"]))))
    return items


def interview_provenance(interview: Interview, turns: Iterable[Turn]) -> list[Item]:
    """(label, value) pairs for the interview's provenance panel."""
    turns = list(turns)
    participant = interview.participant
    items: list[Item] = [("Origin", interview.get_origin_display())]
    for label, value in (
        ("Source file", interview.source_filename), ("Format", interview.source_format),
        ("File SHA-256", interview.source_sha256), ("Conversation id", interview.source_conversation_id),
        ("Content SHA-256", interview.content_sha256),
        ("Provider", participant.provider), ("Model id", participant.model_id),
        ("Interface", participant.get_interface_display()),
        ("Snapshot", participant.snapshot_date.isoformat() if participant.snapshot_date else ""),
    ):
        if value:
            items.append((label, str(value)))
    slugs = sorted({t.model_slug for t in turns if t.model_slug})
    if slugs:
        items.append(("Model slugs in turns", ", ".join(slugs)))
    stamps = sorted(t.timestamp for t in turns if t.timestamp)
    if stamps:
        items.append(("First turn", when(stamps[0])))
        items.append(("Last turn", when(stamps[-1])))
    if interview.conducted_at:
        items.append(("Conducted", when(interview.conducted_at)))
    items.append(("Added to the project", when(interview.created_at)))
    for key, value in _dict(interview.metadata).items():
        if _scalar(value):
            items.append((key.replace("_", " ").capitalize(), str(value)))
    return items


# What `turn_citation` reads from a live turn's record, so a caller can fetch just these
# (the record also holds the whole request history and raw response).
CITED_LIVE_KEYS = ("model_requested", "model_returned", "usage", "finish_reason", "system_fingerprint")
CITED_TOKEN_KINDS: tuple[Item, ...] = TOKEN_KINDS[:2]


def turn_citation(*, live: Any, model_slug: str, timestamp: dt.datetime | None, via: str,
                  source_format: str = "", source_filename: str = "", source_sha256: str = "") -> list[str]:
    """A turn's provenance as a paper's methods appendix cites it, one short part per fact.

    Live turns (a chat-completions record in `live`): the returned model (and the requested
    one if it differs), `via` (provider, interface), the time in UTC, the sampling parameters
    that were set, the finish reason, prompt and completion tokens and the system fingerprint.
    Imported turns: the source file (format, name, first 12 hex digits of its SHA-256),
    the turn's model slug, `via` and time.
    """
    p = _dict(live)
    at = when(timestamp) if timestamp else ""
    if not p:
        sha = f"sha256:{source_sha256[:12]}" if source_sha256 else ""
        source = " ".join(filter(None, [source_format, source_filename, sha]))
        # `via` alone (a live interviewer's question) says nothing about the turn itself.
        return [x for x in (source, model_slug, via, at) if x] if source or model_slug or at else []
    returned, requested = p.get("model_returned"), p.get("model_requested")
    model = str(returned or requested or model_slug or "")
    if returned and requested and returned != requested:
        model += f" (requested {requested})"
    tokens = token_counts(_dict(p.get("usage")), CITED_TOKEN_KINDS)
    parts = [model, via, at, request_parameters(_dict(p.get("request"))),
             f"finish reason {p['finish_reason']}" if p.get("finish_reason") else "",
             f"tokens {tokens}" if tokens else "",
             f"system fingerprint {p['system_fingerprint']}" if p.get("system_fingerprint") else ""]
    return [x for x in parts if x]
