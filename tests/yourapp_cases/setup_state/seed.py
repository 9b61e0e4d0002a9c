"""The app's set-up (SETUP="python seed.py"): the visitor it greets, written once per fresh container with the time
it was written, a random id and a random salt. No two set-ups write the same."""

import json
import secrets
import uuid
from datetime import UTC, datetime
from pathlib import Path

folder = Path(__file__).parent / "instance"
folder.mkdir(exist_ok=True)
seed = {"last_seen": datetime.now(UTC).isoformat(), "visitor": str(uuid.uuid4()), "salt": secrets.token_urlsafe(16)}
(folder / "seed.json").write_text(json.dumps(seed))
