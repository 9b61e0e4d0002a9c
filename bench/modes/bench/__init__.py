"""`make bench`, `make sweep` and `make overload`: every scenario verified and loaded, the tutorial's ab command
the harness's way. Its room: run.py (the run: its options, the targets of each scenario and their loads). Its
measuring, record and tables, which make map and make recommend share, live below in bench/bench_run. A room imports
nothing of another mode."""
