"""The bonus app with psycopg2 made cooperative: psycogreen hands libpq's waits to gevent's hub."""

from psycogreen.gevent import patch_psycopg

patch_psycopg()

from app import app  # noqa: E402

__all__ = ["app"]
