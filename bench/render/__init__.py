"""What every renderer draws with: index.html from the parts a renderer gives (html_page.py), and the heading,
packages, chart footer and Markdown table every page shares (shared.py). A renderer draws a result set from its
OUT/results.json alone (results.md, the charts, index.html): no Docker, no load, any machine, long after the run.
Which renderer draws which set: bench/sets.py."""
