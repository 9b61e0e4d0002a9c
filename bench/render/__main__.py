"""`python -m bench.render OUT [OUT ...]`: render committed result sets again from their results.json."""

import sys
from pathlib import Path

from bench.sets import render

for folder in sys.argv[1:] or sys.exit("usage: python -m bench.render OUT [OUT ...]"):
    render(Path(folder))
