"""`python -m bench.modes.bench`, what `make bench` runs."""

import sys

from bench.modes.bench.run import main

sys.exit(main())
