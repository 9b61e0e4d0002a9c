"""`python -m bench.modes.recommend`, what `make recommend` runs."""

import sys

from bench.modes.recommend.run import main

sys.exit(main())
