"""The result set's file, OUT/results.json, and nothing else: its format and version (store.py), the vocabulary of
older sets mapped to today's in one place (upgrade.py), and its records typed (records.py for what every record
shares, one module per kind of record for the rest). Above the pure models alone: the measuring machinery writes
through it, the renderers read through it, the modes do both, and it imports none of them."""
