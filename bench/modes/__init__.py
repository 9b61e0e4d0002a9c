"""The modes, one per make target and named after it (`make bench` with its sweep and overload, `latency`, `map`,
`slowclients`, `labs`, `bookstore`, `incidents`, `yourapp`, `recommend`), each a room of its own: a package with its
run (run.py: it declares its options and loads, measures through bench.measure and ends by finishing its result
set), its record and its renderer where they are its own alone. No mode imports another, and nothing imports a
mode's run but its entry points."""
