"""`make labs`: the failure labs, each broken and fixed, measured side by side. Its room: run.py (the run: its
options, loads and records), record.py (its record, typed), render.py (results.md and index.html from its
results.json). A room imports nothing of another mode."""
