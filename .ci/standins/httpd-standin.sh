#!/bin/sh
# `httpd` in the httpd:2.4 stand-in (httpd.Dockerfile): Debian's apache2 with the official image's ServerRoot. The
# modules Debian builds into apache2 are dropped from a copy of the configuration's LoadModule lines, since loading
# a built-in module is an error there and the official build loads them from modules/.
set -e
config=/usr/local/apache2/conf/httpd.conf
copy=$(mktemp /tmp/httpd.conf.XXXXXX)
sed -E '/^[[:space:]]*LoadModule[[:space:]]+(so|watchdog|log_config|logio|version|unixd)_module[[:space:]]/d' \
  "$config" >"$copy"
chmod 644 "$copy"
exec /usr/sbin/apache2 -d /usr/local/apache2 -f "$copy" -C 'PidFile logs/httpd.pid' "$@"
