"""The generated reference pages, one source of truth each (tests fail when a page is stale):

python -m ekstrain.cli.reference catalog > docs/catalog.md                (ekstrain/facts/catalog.py)
python -m ekstrain.cli.reference configuration > docs/configuration.md    (the stack config models)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def _catalog() -> str:
    from ekstrain.facts import catalog

    return catalog.markdown()


def _configuration() -> str:
    from ekstrain.stacks import reference

    return reference.render() + "\n"


PAGES: dict[str, Callable[[], str]] = {"catalog": _catalog, "configuration": _configuration}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ekstrain.cli.reference", description=__doc__.split("\n")[0])
    parser.add_argument("page", choices=sorted(PAGES), help="the page to print (docs/<page>.md)")
    args = parser.parse_args(argv)
    sys.stdout.write(PAGES[args.page]())
    return 0


if __name__ == "__main__":
    sys.exit(main())
