"""Measuring, on top of the containers and the load generators: one target verified, warmed up and loaded into
a typed record (target.py), and the result set a run writes its records into (resultset.py)."""
