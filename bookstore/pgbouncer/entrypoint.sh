#!/bin/sh
# The password and the statement timeout come from the environment (the compose file), never from the image: the
# configuration and the password file are written where only this user reads them, then pgbouncer runs in the
# foreground.
set -eu
umask 077
printf '"postgres" "%s"\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}" > /tmp/userlist.txt
timeout_ms=$(awk -v s="${POSTGRES_STATEMENT_TIMEOUT:-30}" 'BEGIN { printf "%d", s * 1000 }')
sed "s/@STATEMENT_TIMEOUT_MS@/$timeout_ms/" /etc/pgbouncer/pgbouncer.ini > /tmp/pgbouncer.ini
exec pgbouncer /tmp/pgbouncer.ini
