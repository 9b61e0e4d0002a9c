"""`python -m bench.modes.bookstore`, what `make bookstore` runs."""

import sys

from bench.modes.bookstore.run import main

sys.exit(main())
