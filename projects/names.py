"""One rule for the names people tell things apart by: codes, themes, guides, probes and participants.

A name is stored normalised (`normalised_name`) and two names are one when they agree but for case (`name_key`,
and Lower(name) in each model's unique constraint). Names that look the same on screen are then the same name:
"Café" typed or pasted in either Unicode form, with a no-break or doubled space, or with a zero-width space inside.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

# Invisible and meaningless inside a name: zero-width space, word joiner, zero-width no-break space (a stray BOM).
# Zero-width (non-)joiners stay: they change how emoji and Persian or Indic words are written.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u2060\ufeff"))


def normalised_name(name: str | None) -> str:
    """The name as stored: invisible characters dropped, composed (NFC), each run of white space (no-break ones
    too) one space, trimmed."""
    composed = unicodedata.normalize("NFC", (name or "").translate(_INVISIBLE))
    return " ".join(composed.split())


def name_key(name: str | None) -> str:
    """What two names share when they are one name: normalised, lower-cased (as the constraints' Lower(name))."""
    return normalised_name(name).lower()


@contextmanager
def name_kept_unique(constraint: str, taken: ValidationError, recheck: Callable[[], object] | None = None) -> Iterator[None]:
    """Around the save of a name (or any row a unique `constraint` guards) checked free: someone (a colleague, a double
    click) who took it between the check and the save meets the database's `constraint`, and the writer gets a
    refusal, not an error page: the check's own (`recheck()`, naming who has the name), else `taken`."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError as exc:
        if constraint not in str(exc):
            raise
        if recheck is not None:
            recheck()
        raise taken from None


def names_made_distinct(model: Any, field: str, *, live: dict[str, Any] | None = None, schema_editor: Any = None) -> None:
    """For a migration adding a Lower(name) constraint: every row's name normalised; where live rows of a project
    then share a name whatever its case, the oldest keeps it and the others get “ (2)”, “ (3)”… (as themes 0007),
    so nothing is lost and the team can tell them apart. `live`: the constraint's condition, if any."""
    max_length = model._meta.get_field(field).max_length
    rows = list(model._base_manager.order_by("created_at", "id"))
    live_ids = set(model._base_manager.filter(**(live or {})).values_list("id", flat=True))
    names = {row.id: normalised_name(getattr(row, field))[:max_length] or "Untitled" for row in rows}
    taken: dict[int, set[str]] = defaultdict(set)  # every live name of a project, lower-cased
    for row in rows:
        if row.id in live_ids:
            taken[row.project_id].add(names[row.id].lower())
    kept: dict[int, set[str]] = defaultdict(set)  # names a live row (the oldest) holds
    for row in rows:
        name = names[row.id]
        if row.id in live_ids and name.lower() in kept[row.project_id]:
            name = _numbered(name, taken[row.project_id], max_length)
        if row.id in live_ids:
            kept[row.project_id].add(name.lower())
        if name != getattr(row, field):
            setattr(row, field, name)
            row.save(update_fields=[field])
    if schema_editor is not None and schema_editor.connection.vendor == "postgresql":
        # PostgreSQL builds no index on a table with checks still pending in this transaction.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _numbered(name: str, taken: set[str], max_length: int) -> str:
    """The name with the first “ (n)” from 2 that no live row of the project has; added to `taken`."""
    number = 2
    while True:
        suffix = f" ({number})"
        candidate = name[: max_length - len(suffix)].rstrip() + suffix
        if candidate.lower() not in taken:
            taken.add(candidate.lower())
            return candidate
        number += 1
