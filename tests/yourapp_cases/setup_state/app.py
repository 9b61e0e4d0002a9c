"""An app whose answers show what its set-up wrote (seed.py, run as SETUP): a visitor's last_seen time, a random id
and a fingerprint made with a random salt, for tests/test_yourapp_cases.py. Each way's fresh container runs the
set-up again, so that these differ from way to way as they do between the reference's two set-ups."""

import hashlib
import json
from datetime import datetime
from pathlib import Path

from flask import Flask, jsonify, render_template_string

app = Flask(__name__)
SEED = Path(__file__).parent / "instance" / "seed.json"

PAGE = """<!doctype html>
<html><head><title>Welcome back</title></head><body>
<h1>Welcome back, visitor {{ seed.visitor }}</h1>
<p>Last seen on {{ last_seen.strftime("%Y-%m-%d at %H:%M:%S") }} (UTC), {{ last_seen.isoformat() }}.</p>
<p>Your fingerprint: {{ fingerprint }}</p>
</body></html>
"""


def seeded() -> tuple[dict[str, str], datetime, str]:
    seed = json.loads(SEED.read_text())
    fingerprint = hashlib.sha256((seed["salt"] + seed["visitor"]).encode()).hexdigest()
    return seed, datetime.fromisoformat(seed["last_seen"]), fingerprint


@app.get("/")
def home():
    seed, last_seen, fingerprint = seeded()
    return render_template_string(PAGE, seed=seed, last_seen=last_seen, fingerprint=fingerprint)


@app.get("/api/me")
def me():
    seed, last_seen, fingerprint = seeded()
    # A datetime in JSON: Flask writes it as an HTTP date, "Thu, 27 Nov 2026 10:00:01 GMT".
    return jsonify(visitor=seed["visitor"], last_seen=last_seen, seeded=seed["last_seen"], fingerprint=fingerprint)
