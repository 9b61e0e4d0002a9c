"""The modes, one per make target and named after it (`make bench` with its sweep and overload, `latency`, `map`,
`slowclients`, `labs`, `bookstore`): each declares its loads, measures through bench.measure and ends by finishing
its result set. Nothing imports a mode."""
