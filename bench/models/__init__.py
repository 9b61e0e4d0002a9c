"""The pure models, below everything else: ab's and the servers' ceilings (ceiling.py), the bounds on more cores
(scaling.py), percentiles (percentiles.py), medians and spreads (spread.py). Functions of numbers: they import
nothing of the harness, start nothing and read no file, so every layer above may use them."""
