#!/bin/sh
# The official image's first-start behaviour, in brief: a cluster owned by POSTGRES_USER with
# POSTGRES_PASSWORD, reachable by password from other containers; then postgres as PID 1.
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
user=${POSTGRES_USER:-postgres}
as_postgres() { setpriv --reuid postgres --regid postgres --init-groups "$@"; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  install -d -o postgres -g postgres -m 700 "$PGDATA"
  printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/password && chown postgres /tmp/password
  as_postgres initdb --username="$user" --pwfile=/tmp/password --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm /tmp/password
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  db=${POSTGRES_DB:-$user}
  if [ "$db" != postgres ]; then
    as_postgres postgres --single -D "$PGDATA" postgres <<SQL >/dev/null
CREATE DATABASE "$db";
SQL
  fi
fi
[ "${1:-}" = postgres ] && set -- "$@" -c listen_addresses='*'
exec setpriv --reuid postgres --regid postgres --init-groups "$@"
