"""`python -m bench.modes.slowclients`, what `make slowclients` runs."""

import sys

from bench.modes.slowclients.run import main

sys.exit(main())
