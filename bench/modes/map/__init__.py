"""`make map`: where each way of serving wins, over a grid of I/O waits, CPU work and clients. Its room: run.py (the
run: its grid of cells, each measured as make bench measures), render.py (the map, results.md and index.html). Its
record is make bench's (bench/bench_run/record.py). A room imports nothing of another mode."""
