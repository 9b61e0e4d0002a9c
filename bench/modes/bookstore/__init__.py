"""`make bookstore`: the realistic app under a mixed load, each way of serving it in turn, then the same SQL against
the database alone. Its room: run.py (the run: its options, its targets in turn, its records), record.py (its
record, typed), render.py with rows.py and charts.py (results.md, its charts, index.html); round.py (one round:
each target under wrk_load.py's wrk, then pgbench_replay.py's pgbench on the SQL sql_capture.py caught, with
postgres_work.py's count of what Postgres did meanwhile). wrk's script is bench/modes/bookstore.lua, beside the
room. A room imports nothing of another mode."""
