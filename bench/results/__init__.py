"""The result set's file, OUT/results.json, and nothing else: its format and version (store.py), the vocabulary of
older sets mapped to today's in one place (upgrade.py), and what every record shares, typed (records.py); each kind
of record lives with what measures it. Above the pure models alone: the measuring machinery writes through it, the
renderers read through it, the modes do both, and it imports none of them."""
