"""A hot SQL statement that PostgreSQL parses and plans once per connection, then only executes.

Applying a code is one large statement (coding/services.py). Measured on these machines,
parsing and planning it took longer than running it: about 1.1 ms of planning for 0.7 ms of
execution. Django never asks psycopg to prepare (its connections have no prepare threshold),
so the statement is prepared in SQL: the first use on a connection sends `PREPARE name AS ...;
EXECUTE name(...)` in one round trip, later uses send only `EXECUTE name(...)`. Both go through
Django's cursor, so query counting and logging see one query as before.

PostgreSQL keeps a prepared statement for the life of its session (a rollback does not drop
it) and replans it when a table it reads changes or is analysed, so a plan made while a table
was small is not kept once it has grown. It needs each Django connection to be one PostgreSQL
session: a direct connection, as in docker-compose.yml, or a pooler in session mode (not
PgBouncer's transaction mode).
"""

from __future__ import annotations

import itertools
import re
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


class PreparedStatement:
    """`sql` uses Django's named placeholders, `%(name)s`; `parameters` names each one with its SQL type, in order."""

    def __init__(self, name: str, sql: str, parameters: Sequence[tuple[str, str]]) -> None:
        self.name = name
        self._names = [p for p, _ in parameters]
        positions = {p: f"${n}" for n, p in enumerate(self._names, 1)}
        unknown = set(_PLACEHOLDER.findall(sql)) - set(positions)
        if unknown:
            raise ValueError(f"{name}: no type given for {', '.join(sorted(unknown))}")
        self._body = _PLACEHOLDER.sub(lambda m: positions[m.group(1)], sql)
        self._types = ", ".join(t for _, t in parameters)
        self._arguments = ", ".join(["%s"] * len(parameters))
        self._serial = itertools.count(1)
        # psycopg connection -> the name this statement has on it. Weak: a closed connection's entry goes with it.
        self._prepared_as: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def fetchone(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        values = [params[p] for p in self._names]
        with connection.cursor() as cursor:
            raw = connection.connection
            name = self._prepared_as.pop(raw, None)
            if name is None:
                # A fresh name each time: after a failed call the old name may or may not exist.
                name = f"{self.name}_{next(self._serial)}"
                cursor.execute(f"PREPARE {name} ({self._types}) AS {self._body}; EXECUTE {name} ({self._arguments})",
                               values)
                cursor.nextset()
            else:
                cursor.execute(f"EXECUTE {name} ({self._arguments})", values)
            row = cursor.fetchone()
            # Recorded only after success: a failed call prepares afresh next time.
            self._prepared_as[raw] = name
            return row
