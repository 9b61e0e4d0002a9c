"""What every gunicorn scenario shares (`--config gunicorn.conf.py`); each compose file adds the worker class
and how many requests it holds at once."""

bind = "0.0.0.0:3000"
# The default listen backlog (2048) is below the loads the overload tests send.
backlog = 4096
# gunicorn 27's control socket lives in $HOME, which `nobody` does not have: off, instead of an error at start.
control_socket_disable = True
# A stop (SIGTERM) waits this long for requests in flight; the compose files give containers 35 s.
graceful_timeout = 30
