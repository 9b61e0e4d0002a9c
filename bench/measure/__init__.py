"""Measuring, on top of the containers and the load generators: a target verified and loaded from the client's side
(client.py), what its containers say of themselves (server_facts.py), every mode's start of a scenario
(scenario_start.py), what two modes share of their own measuring (bookstore.py, host_probe.py, profile.py), and the
result set a run writes its records into (resultset.py)."""
