"""`make yourapp`: the reader's own app served every way, each way's answers checked against the development server's,
then loaded with the reader's own mix. Its room: run.py (the run: its options, its ways in turn, its records),
record.py (its record, typed), render.py and answer.py (the page and its decision); the app as an image
(requirements.py, image.py, errors.py), each way running (services.py, ways.py), the checks of its answers
(checks.py, answer_match.py), the load (session.py, load.py) and its database's work (database.py). A room imports
nothing of another mode."""
