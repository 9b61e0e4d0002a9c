"""An app whose database driver is not installed (as SQLAlchemy 2.1 asks for psycopg 3 on a `postgresql://` URL where
only psycopg2 is): its set-up `flask db upgrade` prints the ImportError, then "Error: No such command 'db'."."""

import psycopg  # noqa: F401  # not in its requirements
from flask import Flask

app = Flask(__name__)
