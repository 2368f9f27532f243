"""Test databases are dropped even while a connection the test session could not close holds them.

Some connections outlive the tests that opened them: a live-server thread still waiting on a
client's keep-alive socket, for one, keeps its persistent connection (CONN_MAX_AGE). A plain
DROP DATABASE then fails ("being accessed by other users"), pytest warns and the database is
left behind. PostgreSQL 13 and later end those sessions as part of the drop.
"""

from __future__ import annotations

from django.db.backends.postgresql.creation import DatabaseCreation as PostgresDatabaseCreation


class DatabaseCreation(PostgresDatabaseCreation):
    def _destroy_test_db(self, test_database_name: str, verbosity: int) -> None:
        with self._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE {self.connection.ops.quote_name(test_database_name)} WITH (FORCE)")
