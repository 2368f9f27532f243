"""Django's PostgreSQL backend with a connection health check that costs no round trip.

With persistent connections (CONN_MAX_AGE) Django checks a reused connection at the start of
each request with `SELECT 1` (CONN_HEALTH_CHECKS), so a request after a PostgreSQL restart
gets a fresh connection instead of an error. That check is one of the few database round
trips of applying a code. A connection waiting between requests has nothing to read; a
server that restarted or terminated the backend has sent its FATAL notice and closed the
socket, which makes it readable. So: a quiet socket passes without a query, a readable one
gets the real `SELECT 1` (which fails, and Django reconnects).
"""

from __future__ import annotations

import select

from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper

from config.postgresql.creation import DatabaseCreation


class DatabaseWrapper(PostgresDatabaseWrapper):
    creation_class = DatabaseCreation

    def init_connection_state(self) -> None:
        """Turn PostgreSQL's JIT compiler off for this connection.

        Our statements are short, but a page of a large project can cross jit_above_cost on the planner's
        estimate, and compiling then costs more than running: 600 ms of JIT for the interview list's 90 ms
        query at 10× the peer corpus (bench/phases/scale.py). Set on the connection, not in the server's
        config or a startup option, so it also holds behind a pooler and on a managed PostgreSQL.
        """
        super().init_connection_state()
        with self.connection.cursor() as cursor:
            cursor.execute("SET jit = off")

    def close_if_health_check_failed(self) -> None:
        if (self.connection is not None and self.health_check_enabled and not self.health_check_done
                and self._socket_is_quiet()):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def _socket_is_quiet(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection.fileno()], [], [], 0)
        except (OSError, ValueError):  # closed or broken descriptor: let the real check decide
            return False
        return not readable
