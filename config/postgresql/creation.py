"""Test databases are dropped even while a connection the test session could not close holds them.

Browser tests leave live-server threads waiting on the browser's keep-alive sockets, each with
its persistent database connection (CONN_MAX_AGE); when the session ends before they notice, a
plain DROP DATABASE fails ("being accessed by other users"), pytest warns and the database is
left behind. PostgreSQL 13 and later end those sessions as part of the drop.
"""

from __future__ import annotations

from django.db.backends.postgresql.creation import DatabaseCreation as PostgresDatabaseCreation


class DatabaseCreation(PostgresDatabaseCreation):
    def _destroy_test_db(self, test_database_name: str, verbosity: int) -> None:
        with self._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE {self.connection.ops.quote_name(test_database_name)} WITH (FORCE)")
