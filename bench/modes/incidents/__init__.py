"""`make incidents`: what a reload, a killed worker, a crash and a deploy cost under load. Its room: run.py (the
run: its options, events and records), record.py (its record, typed), render.py (results.md and index.html from
its results.json). A room imports nothing of another mode."""
