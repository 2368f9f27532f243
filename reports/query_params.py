"""A report's GET parameters: yes/no flags and fixed choices, refusing a value that means neither (an API
client's typo must not quietly give another table than the one asked for)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

YES, NO = ("1", "on", "true", "yes"), ("0", "off", "false", "no")


def last(query: Mapping[str, Any], key: str) -> str | None:
    """The parameter's value; of a repeated one (a checkbox after its hidden default), the last."""
    value = query.get(key)
    if isinstance(value, list):
        return value[-1] if value else None
    return value


def flag(query: Mapping[str, Any], key: str, default: bool, error: type[Exception]) -> bool:
    value = last(query, key)
    if value in (None, ""):
        return default
    if value.lower() in YES:
        return True
    if value.lower() in NO:
        return False
    raise error(f"{key}: {value!r} is neither yes nor no; send 1 or 0.")


def choice[T](query: Mapping[str, Any], key: str, choices: Mapping[str, T], default: T, error: type[Exception]) -> T:
    value = last(query, key)
    if value in (None, ""):
        return default
    if value not in choices:
        raise error(f"{key}: {value!r} is not one of {', '.join(choices)}.")
    return choices[value]
