"""Tools around the scenarios: the target matrix, running compose, loading with ab, counting threads."""
