"""The load generators, the lowest layer: each builds its command and reads its output (ab, hey, wrk, vegeta,
pgbench), and knows the best a perfect server could score under it (ceiling.py). Nothing here knows a scenario."""
