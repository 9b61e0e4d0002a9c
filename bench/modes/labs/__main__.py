"""`python -m bench.modes.labs`, what `make labs` runs."""

import sys

from bench.modes.labs.run import main

sys.exit(main())
