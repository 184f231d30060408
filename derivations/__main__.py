"""Command line.

``python -m derivations [--layer KEY] [--format text|markdown|json|latex|conventions]
[--standalone] [--notation SYMBOL=LATEX ...]`` prints every derived formula;
``python -m derivations check ...`` gives verdicts on claims (see
``python -m derivations check --help``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from derivations.catalog import CORE, LAYERS, rows
from derivations.claims.render import VERDICT_FORMATS
from derivations.cli import OneLineParser
from derivations.notation import RENAMABLE, Notation
from derivations.render import FORMATS, standalone


def _derive(argv: list[str]) -> int:
    parser = OneLineParser(prog="python -m derivations", description="Print every derived formula with its LaTeX.")
    parser.add_argument("--format", choices=sorted(FORMATS), default="text", help="output format (default: text)")
    parser.add_argument("--layer", choices=list(LAYERS), help="print one layer (default: every layer)")
    parser.add_argument(
        "--standalone", action="store_true", help="with --format latex: a complete article, for pdflatex"
    )
    parser.add_argument(
        "--notation",
        action="append",
        default=[],
        metavar="SYMBOL=LATEX",
        help=f"print SYMBOL ({', '.join(RENAMABLE)}) as LATEX, e.g. n=d or epsilon=\\epsilon",
    )
    args = parser.parse_args(argv)
    if args.standalone and args.format != "latex":
        parser.error("--standalone applies to --format latex")
    try:
        notation = Notation.parse(args.notation)
    except ValueError as error:
        parser.error(str(error))
    try:
        text = FORMATS[args.format](rows([args.layer] if args.layer else list(LAYERS), notation))
        if args.standalone:
            text = standalone(text)
    except Exception as error:
        print(f"{parser.prog}: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(text)  # a failure to write is the caller's: `run` makes it one line
    return 0


def _check(argv: list[str]) -> int:
    parser = OneLineParser(
        prog="python -m derivations check",
        description="Verdicts on claims: proved, refuted (with a counterexample), supported, or error.",
    )
    parser.add_argument("claim", nargs="?", help='a claim such as "slope_at_zero == 1/sqrt(epsilon)"')
    parser.add_argument("--claims", type=Path, metavar="FILE", help="a TOML file of [[claim]] entries")
    parser.add_argument("--layer", default=CORE, choices=list(LAYERS), help="layer of an inline claim")
    parser.add_argument("--assume", action="append", default=[], metavar="COND", help="assumption, e.g. 'n >= 3'")
    parser.add_argument("--format", choices=sorted(VERDICT_FORMATS), default="text", help="output format")
    args = parser.parse_args(argv)
    if (args.claim is None) == (args.claims is None):
        parser.error("give either one inline claim or --claims FILE")
    if args.claims is not None and args.assume:
        parser.error("--assume applies to an inline claim; a claims file gives assumptions per entry")

    # Imported here: the checker pulls in the numeric layer for confirmation,
    # which printing formulas does not need.
    from derivations.claims import Claim, ClaimError, check, load
    from numeric.confirm import confirm

    try:
        claims = load(args.claims) if args.claims else [Claim(args.claim, args.layer, tuple(args.assume), id="inline")]
    except ClaimError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    verdicts = [check(claim, confirm) for claim in claims]
    sys.stdout.write(VERDICT_FORMATS[args.format](verdicts))
    return 0 if all(v.met for v in verdicts) else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"]:
        return _check(argv[1:])
    return _derive(argv)


if __name__ == "__main__":
    from derivations.cli import run

    raise SystemExit(run(main, "python -m derivations"))
