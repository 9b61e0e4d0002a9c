"""The load generators: each builds its command and reads its output (ab, hey, wrk, vegeta, pgbench), and knows the
best a perfect server could score under it (from bench/models/ceiling.py). Nothing here knows a scenario."""
