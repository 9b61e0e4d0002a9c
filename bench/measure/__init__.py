"""Measuring, on top of the containers and the load generators: a target verified and loaded from the client's side
(client.py), what its containers say of themselves (server_facts.py), one scenario's targets measured into make
bench's typed record (bench_run.py, bench_record.py), each mode's own measuring (bookstore.py and its neighbours,
profile.py, sql_capture.py), and the result set a run writes its records into (resultset.py)."""
