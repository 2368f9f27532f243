#!/bin/sh
# The stand-in for the official image's entrypoint, for what docker-compose.yml uses of it: on an empty data
# directory, a cluster whose superuser is POSTGRES_USER (password POSTGRES_PASSWORD, required from other hosts)
# and a database POSTGRES_DB; then PostgreSQL in the foreground, listening on every address.
set -eu
PGDATA="${PGDATA:-/var/lib/postgresql/data}"
BIN="$(ls -d /usr/lib/postgresql/*/bin | tail -n 1)"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /run/postgresql
  chown -R postgres:postgres "$PGDATA" /run/postgresql
  chmod 700 "$PGDATA"
  exec runuser -u postgres -- "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
  user="${POSTGRES_USER:-postgres}"
  password_file="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" > "$password_file"
  "$BIN/initdb" -D "$PGDATA" -U "$user" --pwfile="$password_file" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8
  rm -f "$password_file"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  if [ "${POSTGRES_DB:=$user}" != "postgres" ]; then
    "$BIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start
    "$BIN/createdb" -U "$user" "$POSTGRES_DB"
    "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop
  fi
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
