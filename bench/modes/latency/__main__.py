"""`python -m bench.modes.latency`, what `make latency` runs."""

import sys

from bench.modes.latency.run import main

sys.exit(main())
