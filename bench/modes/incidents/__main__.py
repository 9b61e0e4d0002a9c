"""`python -m bench.modes.incidents`, what `make incidents` runs."""

import sys

from bench.modes.incidents.run import main

sys.exit(main())
