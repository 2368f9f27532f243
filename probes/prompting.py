"""What a condition sends for an item, and how the model's answer is parsed back.

Two output schemas: a JSON schema sent as structured output (`response_format`) and
validated again here, or labelled lines in plain text ("Gender: woman",
"Codes Applied: Declaration, Other", "Rationale: ...").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from probes.models import ConditionVersion, Item, OutputFormat
from projects import safejson
from projects.text import shortened

PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w -]*)\}")


class ParseError(ValueError):
    """The answer does not fit the condition's output schema; the message says how."""


@dataclass
class Parsed:
    label: str
    categories: list[str] = field(default_factory=list)
    rationale: str = ""
    fields: dict[str, Any] = field(default_factory=dict)


def item_fields(item: Item) -> dict[str, str]:
    """What a template can name: {text}, every attribute and every ground-truth column."""
    return {**{k: _str(v) for k, v in item.attributes.items()}, **item.labels, "text": item.text}


def placeholders(template: str) -> list[str]:
    return list(dict.fromkeys(PLACEHOLDER.findall(template)))


def render(template: str, fields: dict[str, str]) -> str:
    """Fill `{name}` for every known field; other braces (JSON examples in the prompt) stay as written."""
    return PLACEHOLDER.sub(lambda m: fields.get(m.group(1), m.group(0)), template)


def agent_steps(version: ConditionVersion) -> list[dict[str, str]]:
    """The agents of the condition in order: its own prompt first (the assistant), then the pipeline's."""
    first = {"name": "assistant" if version.pipeline else "answer", "system_prompt": version.system_prompt,
             "template": version.template}
    return [first, *version.pipeline]


def messages_for(
    version: ConditionVersion, item: Item, *, agent: dict[str, str] | None = None, previous: list[dict[str, Any]] | None = None
) -> list[dict[str, str]]:
    """The messages for one item (and one agent of a pipeline; {previous} is the earlier agents' answers as JSON)."""
    agent = agent or agent_steps(version)[0]
    fields = item_fields(item) | {"previous": json.dumps(previous or [], ensure_ascii=False, indent=2)}
    messages = []
    if agent.get("system_prompt"):
        messages.append({"role": "system", "content": render(agent["system_prompt"], fields)})
    messages.append({"role": "user", "content": render(agent["template"], fields)})
    return messages


def schema_for(version: ConditionVersion) -> dict[str, Any]:
    """The condition's JSON schema, or one built from its keys, labels and categories."""
    if version.json_schema:
        return version.json_schema
    properties: dict[str, Any] = {version.label_key: {"type": "string", "enum": list(version.labels)}}
    if version.categories_key:
        properties[version.categories_key] = {"type": "array", "items": {"type": "string"}}
    if version.rationale_key:
        properties[version.rationale_key] = {"type": "string"}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def response_format(version: ConditionVersion) -> dict[str, Any] | None:
    if version.output_format != OutputFormat.JSON_SCHEMA:
        return None
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", version.condition.name)[:64] or "answer"
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema_for(version), "strict": True}}


def parse(version: ConditionVersion, text: str) -> Parsed:
    """The answer's label, categories and rationale; raises ParseError with the reason."""
    if not text.strip():
        raise ParseError("The answer was empty: the model sent no text.")
    if version.output_format == OutputFormat.JSON_SCHEMA:
        fields = _json_fields(version, text)
    else:
        fields = _line_fields(version, text)
    label = _allowed_label(version, fields.get(version.label_key))
    categories = _categories(fields.get(version.categories_key)) if version.categories_key else []
    rationale = _str(fields.get(version.rationale_key, "")).strip() if version.rationale_key else ""
    return Parsed(label=label, categories=categories, rationale=rationale, fields=fields)


def _json_fields(version: ConditionVersion, text: str) -> dict[str, Any]:
    body = _strip_fence(text)
    try:
        value = safejson.loads(body)
    except safejson.JSONInputError as exc:
        if not body.lstrip().startswith(("{", "[")):
            # A refusal or an explanation instead of JSON: the parser's "Expecting value" would hide which.
            raise ParseError(f"Not JSON: the answer is plain text (“{_preview(body)}”).") from None
        raise ParseError(f"Not valid JSON: {exc}.") from None
    if not isinstance(value, dict):
        raise ParseError("Expected a JSON object.")
    value = _leniently_read(version, value)
    try:
        jsonschema.validate(value, schema_for(version))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the answer"
        raise ParseError(f"Does not match the JSON schema at {where}: {exc.message}")
    return value


def _leniently_read(version: ConditionVersion, value: dict[str, Any]) -> dict[str, Any]:
    """The label and categories read as labelled lines read them, before the schema checks the answer.

    "Woman" for "woman" and "Declaration; Other" for a list are the same answer in either output format.
    """
    value = dict(value)
    label = value.get(version.label_key)
    if isinstance(label, str):
        value[version.label_key] = _matching_label(version, label) or label
    if version.categories_key and isinstance(value.get(version.categories_key), str):
        value[version.categories_key] = _categories(value[version.categories_key])
    return value


def _preview(text: str, length: int = 80) -> str:
    return shortened(" ".join(text.split()), length)


def _strip_fence(text: str) -> str:
    """Some endpoints wrap JSON in a Markdown code fence even when asked for structured output."""
    match = re.fullmatch(r"\s*```(?:json)?\s*\n(.*?)\n?```\s*", text, re.DOTALL)
    return match.group(1) if match else text


def _line_fields(version: ConditionVersion, text: str) -> dict[str, str]:
    """{key: value} for each labelled line; a value runs on to the next labelled line."""
    keys = [k for k in (version.label_key, version.categories_key, version.rationale_key) if k]
    starts = re.compile(
        r"^[\s>*_#-]*(" + "|".join(re.escape(k) for k in keys) + r")[\s*_]*:[\s*_]*(.*)$", re.IGNORECASE
    )
    canonical = {k.lower(): k for k in keys}
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        match = starts.match(line)
        if match:
            current = canonical[match.group(1).lower()]
            fields.setdefault(current, []).append(match.group(2))
        elif current is not None:
            fields[current].append(line)
    if version.label_key not in fields:
        raise ParseError(f"No “{version.label_key}:” line in the answer.")
    return {key: "\n".join(lines).strip() for key, lines in fields.items()}


def _matching_label(version: ConditionVersion, value: Any) -> str | None:
    """The allowed label the model said, whatever its case, spacing or surrounding punctuation."""
    said = _label_key(_str(value))
    return next((label for label in version.labels if _label_key(label) == said), None) if said else None


def _label_key(text: str) -> str:
    return " ".join(text.strip().strip(".*_\"'` ").lower().split())


def _allowed_label(version: ConditionVersion, value: Any) -> str:
    if not _label_key(_str(value)):
        raise ParseError(f"The “{version.label_key}” is empty.")
    label = _matching_label(version, value)
    if label is not None:
        return label
    allowed = ", ".join(version.labels)
    raise ParseError(f"“{version.label_key}” is “{_str(value).strip()[:80]}”, which is not one of: {allowed}.")


def _categories(value: Any) -> list[str]:
    if isinstance(value, list):
        items = [_str(v) for v in value]
    else:
        items = re.split(r"[,;\n]", _str(value))
    cleaned = [item.strip().strip("[]\"'`*-• ").strip() for item in items]
    return list(dict.fromkeys(c for c in cleaned if c and c.lower() not in {"none", "n/a"}))


def _str(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
