"""`make bench`, `make sweep` and `make overload`: every scenario verified and loaded, the tutorial's ab command
the harness's way. Its room: run.py (the run: its options, the targets of each scenario and their loads). What
make map and make recommend share with it lives below: one scenario's run (bench/measure/bench_run.py), the record
(bench/measure/bench_record.py, bench/results/bench.py) and its tables (bench/render/bench.py). A room imports
nothing of another mode."""
