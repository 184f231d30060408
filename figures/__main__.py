"""``python -m figures``: verify the numerics, then draw every figure."""

from __future__ import annotations

import sys
from pathlib import Path

from derivations.cli import OneLineParser, run
from figures import FIGURES
from figures._output import BUILD, png, write_all
from numeric import verify

PROG = "python -m figures"


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__)
    parser.add_argument("--out", type=Path, default=BUILD, help=f"output folder (default: {BUILD})")
    args = parser.parse_args(argv)
    if verify.main([]) != 0:
        print(f"{PROG}: no figure written", file=sys.stderr)
        return 1
    # Every figure is drawn and written before any replaces its old file: the set is new, or as it was.
    for path in write_all({args.out / module.FILENAME: png(module.draw()) for module in FIGURES}):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run(main, PROG))
