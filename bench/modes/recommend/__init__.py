"""`make recommend`: one process against one per core, on every core and on one, and the bounds on machines of more
cores. Its room: run.py (the run: its ways and placements, each measured as make bench measures), render.py (the
page, with the bounds). Its record is make bench's (bench/bench_run/record.py). A room imports nothing of another
mode."""
