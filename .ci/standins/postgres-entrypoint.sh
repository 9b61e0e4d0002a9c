#!/bin/sh
# The official postgres image's docker-entrypoint.sh, its basics only. On the first start (an
# empty PGDATA): initdb with POSTGRES_USER / POSTGRES_PASSWORD, password logins over the network,
# POSTGRES_DB created, /docker-entrypoint-initdb.d/*.sql and *.sh run. Then postgres as PID 1.
# The set-up runs on a socket-only server, so nothing answers on TCP until the real server is up:
# `pg_isready -h 127.0.0.1` means ready, not initialising.
set -eu

# Options alone (`-c max_connections=200`) are options for postgres, as in the official image.
case "${1:-}" in -*) set -- postgres "$@" ;; esac
[ "${1:-}" = postgres ] || exec "$@"

# As root: make the data and socket directories the postgres user's, then run as that user.
if [ "$(id -u)" = 0 ]; then
  install -d -o postgres -g postgres -m 700 "$PGDATA"
  install -d -o postgres -g postgres -m 2777 /var/run/postgresql
  exec setpriv --reuid postgres --regid postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
    echo "error: the database is uninitialized and POSTGRES_PASSWORD is empty." >&2
    echo "  Set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust to allow every connection" >&2
    echo "  without a password (never do that outside a test)." >&2
    exit 1
  fi

  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  # shellcheck disable=SC2086  # POSTGRES_INITDB_ARGS is a list of options, as in the official image
  initdb --username="$user" ${POSTGRES_PASSWORD:+--pwfile="$pwfile"} \
    --auth-local=trust --auth-host="$auth" ${POSTGRES_INITDB_ARGS:-} >/dev/null
  rm -f "$pwfile"
  echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"

  if [ "$db" != postgres ] || [ -n "$(ls -A /docker-entrypoint-initdb.d 2>/dev/null)" ]; then
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w -s start
    export PGUSER="$user" PGDATABASE=postgres
    if [ "$db" != postgres ]; then
      psql -v ON_ERROR_STOP=1 --no-psqlrc -q -v db="$db" <<'SQL'
CREATE DATABASE :"db";
SQL
    fi
    export PGDATABASE="$db"
    for f in /docker-entrypoint-initdb.d/*; do
      case "$f" in
        *.sql) echo "running $f"; psql -v ON_ERROR_STOP=1 --no-psqlrc -q -f "$f" ;;
        *.sh) echo "running $f"; . "$f" ;;
      esac
    done
    pg_ctl -D "$PGDATA" -m fast -w -s stop
    unset PGUSER PGDATABASE
  fi
  echo "PostgreSQL init process complete; ready for start up."
fi

exec "$@"
