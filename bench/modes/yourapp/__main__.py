"""`python -m bench.modes.yourapp`, what `make yourapp` runs."""

import sys

from bench.modes.yourapp.run import main

sys.exit(main())
