"""``python -m figures``: verify the numerics, then draw every figure."""

from __future__ import annotations

import sys
from pathlib import Path

from derivations.cli import OneLineParser
from figures import FIGURES
from figures._output import BUILD, save
from numeric import verify


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m figures", description=__doc__)
    parser.add_argument("--out", type=Path, default=BUILD, help=f"output folder (default: {BUILD})")
    args = parser.parse_args(argv)
    if verify.main([]) != 0:
        print("python -m figures: no figure written", file=sys.stderr)
        return 1
    for module in FIGURES:
        figure = module.draw()
        path = save(figure, args.out / module.FILENAME)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
