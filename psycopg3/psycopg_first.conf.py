"""gunicorn settings for the trap: psycopg imported before gevent's monkey-patch (`--config psycopg_first.conf.py`).

gunicorn runs this file in its master process, before it forks the worker; the gevent worker patches only
then, and then imports app.py, whose `import psycopg` finds the module already loaded. psycopg chose how to
wait when it was first imported, here, with `select` not yet patched: in C, blocking the whole worker for
every query. The same happens to any app whose settings, plugins or --preload import psycopg first.
"""

import psycopg  # noqa: F401
