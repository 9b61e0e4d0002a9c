"""`make slowclients`: slow and idle clients held against each server while a normal request is timed. Its
room: run.py (the run: its options, loads and records), record.py (its record, typed), render.py (results.md and
index.html from its results.json). A room imports nothing of another mode."""
