from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for the provenance panel (autoescaped by the template)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def seconds(ms: Any) -> str:
    if ms is None or ms == "":
        return "—"
    return f"{float(ms) / 1000:.2f} s"
