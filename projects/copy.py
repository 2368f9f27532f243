"""Many rows into one table at once: PostgreSQL's COPY, each row's key drawn from the table's sequence beforehand.

COPY is several times faster than a multi-row INSERT for thousands of rows: there is no statement to build, adapt
and plan per batch. The transcript import, the restore of a backup and the .qdpx import put hundreds of thousands
of rows in this way. Other databases (the embedded SQLite default) take the same rows by INSERT.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from django.db import connection, connections, models

# The sequence is looked up once (OFFSET 0 keeps the subquery from being inlined), not once per id.
_NEXT_IDS = ("SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence(%s, 'id')::regclass AS seq OFFSET 0) s, "
             "generate_series(1, %s)")
INSERT_BATCH = 1000


def next_ids(table: str, count: int) -> list[int]:
    """`count` new keys for rows of `table` (its `id` column), in one round trip."""
    with connection.cursor() as cursor:
        cursor.execute(_NEXT_IDS, [table, count])
        return [row[0] for row in cursor.fetchall()]


@contextmanager
def copy_into(table: str, columns: Sequence[str]) -> Iterator[Callable[[Sequence], None]]:
    """A function that writes one row (its values in `columns`' order) into `table`, on PostgreSQL only.

    A failure comes out as Django's DatabaseError, as from any other statement."""
    cols = ", ".join(f'"{c}"' for c in columns)
    with connection.wrap_database_errors, connection.cursor() as cursor, \
            cursor.cursor.copy(f'COPY "{table}" ({cols}) FROM STDIN') as copy:
        yield copy.write_row


def insert_all(model: type[models.Model], objs: Sequence[models.Model], *, raw: bool = False) -> None:
    """Insert the objects, each given its new key, as bulk_create would (`raw`: the values exactly as they are,
    without pre_save, so auto_now fields keep the times they hold, as loaddata does).

    Unlike bulk_create it sends no signal and checks no unsaved relation: the callers build rows they own."""
    if not objs:
        return
    meta = model._meta
    if meta.pk.attname != "id" or [f.attname for f in meta.db_returning_fields] != ["id"]:
        raise ValueError(f"{meta.label} has no plain id key drawn from a sequence")
    fields = [f for f in meta.concrete_fields if not f.primary_key and not getattr(f, "generated", False)]
    if connection.vendor != "postgresql":
        qs = model._base_manager.all()
        for start in range(0, len(objs), INSERT_BATCH):
            batch = objs[start:start + INSERT_BATCH]
            for obj, (pk,) in zip(batch, qs._insert(batch, fields=fields, returning_fields=[meta.pk], raw=raw),
                                  strict=True):
                obj.pk = pk
    else:
        for obj, pk in zip(objs, next_ids(meta.db_table, len(objs)), strict=True):
            obj.pk = pk
        db = connections[connection.alias]  # the connection itself: `connection` looks it up on every use
        with copy_into(meta.db_table, ["id", *(f.column for f in fields)]) as write:
            for obj in objs:
                write([obj.pk, *(f.get_db_prep_save(getattr(obj, f.attname) if raw else f.pre_save(obj, True), db)
                                 for f in fields)])
    for obj in objs:
        obj._state.adding, obj._state.db = False, connection.alias
