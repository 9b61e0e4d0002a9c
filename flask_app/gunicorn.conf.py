"""What every gunicorn scenario shares (`--config gunicorn.conf.py`); each compose file adds the worker class
and how many requests it holds at once."""

import os

bind = "0.0.0.0:3000"
# The default listen backlog (2048) is below the loads the overload tests send.
backlog = 4096
# gunicorn 27's control socket lives in $HOME, which `nobody` does not have: off, instead of an error at start.
control_socket_disable = True
# A stop (SIGTERM) or a reload (SIGHUP) waits this long for requests in flight, then cuts them: above the longest
# request. The compose files give containers 35 s. GRACEFUL_TIMEOUT shortens it (`make incidents` shows the cost).
graceful_timeout = int(os.environ.get("GRACEFUL_TIMEOUT") or 30)
# Seconds a worker may go without reporting to the master before the master kills it (gunicorn's default, 30).
timeout = int(os.environ.get("WORKER_TIMEOUT") or 30)
# Recycle a worker after this many requests (plus up to MAX_REQUESTS_JITTER, so that workers do not all recycle at
# once); 0, gunicorn's default, never. `make incidents` measures what a recycling costs (docs/incidents.md).
max_requests = int(os.environ.get("MAX_REQUESTS") or 0)
max_requests_jitter = int(os.environ.get("MAX_REQUESTS_JITTER") or 0)
