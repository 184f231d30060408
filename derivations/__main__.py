"""Command line: ``python -m derivations [--format text|markdown|json]``."""

from __future__ import annotations

import sys

from derivations.catalog import LAYERS, rows
from derivations.cli import OneLineParser
from derivations.render import FORMATS


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m derivations", description="Print every derived formula with its LaTeX.")
    parser.add_argument("--format", choices=sorted(FORMATS), default="text", help="output format (default: text)")
    parser.add_argument("--layer", choices=list(LAYERS), help="print one layer (default: every layer)")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(FORMATS[args.format](rows([args.layer] if args.layer else list(LAYERS))))
    except Exception as error:
        print(f"{parser.prog}: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
