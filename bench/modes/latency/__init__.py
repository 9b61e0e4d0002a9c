"""`make latency`: open-loop load (vegeta) at fixed rates against each concurrent target, and the latency
percentiles at each. Its room: run.py (the run: its options, loads and records), record.py (its record, typed),
render.py (results.md and index.html from its results.json). A room imports nothing of another mode."""
