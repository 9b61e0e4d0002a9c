"""`python -m bench.pages` (`make pages`): README.md and docs/recommend.md written again from pages/ and the sets."""

from __future__ import annotations

from bench.pages.render import PAGES, write


def main() -> None:
    changed = write()
    print(f"rendered {', '.join(PAGES)}: " + (f"changed {', '.join(changed)}" if changed else "unchanged"))


if __name__ == "__main__":
    main()
