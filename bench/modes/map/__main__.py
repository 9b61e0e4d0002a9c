"""`python -m bench.modes.map`, what `make map` runs."""

import sys

from bench.modes.map.run import main

sys.exit(main())
