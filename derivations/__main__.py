"""Command line.

``python -m derivations [--layer KEY | --definition FILE] [--format text|markdown|json|latex|conventions]
[--standalone] [--notation SYMBOL=LATEX ...]`` prints every derived formula;
``python -m derivations check ...`` gives verdicts on claims (see
``python -m derivations check --help``); ``python -m derivations codegen
--layer KEY --target numpy|torch|c`` prints the derived forward and backward
pass as a module.
"""

# ruff: noqa: E402 - the Ctrl-C handler is installed before the other imports
from __future__ import annotations

import sys

from derivations import interrupts


def _prog() -> str:
    """The command's name in its messages: a subcommand's failures are named as its own usage errors are."""
    command = sys.argv[1:2]
    return (
        " ".join(["python -m derivations", *command])
        if command in (["check"], ["codegen"], ["review"], ["identify"])
        else "python -m derivations"
    )


if __name__ == "__main__":  # first: a Ctrl-C during the imports below is one line too
    interrupts.one_line(_prog())

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from derivations import cache as derivation_cache
from derivations.cli import OneLineParser, describe

if TYPE_CHECKING:
    import argparse

    from derivations.claims import Claim

# The options a derive run's output depends on, besides the derivation
# sources, with how many values each takes.  Arguments made of these alone
# are looked up in the derivation cache; any other (a file to read, a new
# option) takes the whole way.
_CACHED_OPTIONS = {"--format": 1, "--layer": 1, "--notation": 1, "--standalone": 0}
# The same for a check of inline claims: the claim itself is the one value without an option.
_CACHED_CHECK_OPTIONS = {"--latex": 1, "--layer": 1, "--assume": 1, "--format": 1, "--timeout": 1}
_T = TypeVar("_T")


def _output_entry(argv: list[str], command: str = "", options: dict[str, int] = _CACHED_OPTIONS) -> str | None:
    """The cache entry of a run's whole output for ``argv``, or None where it is not cached."""
    position, claims = 0, 0
    while position < len(argv):
        option, joined, _ = argv[position].partition("=")
        if command and not option.startswith("-"):
            claims, position = claims + 1, position + 1  # an inline claim
            continue
        if option not in options or (joined and not options[option]):
            return None
        position += 1 + (0 if joined else options[option])
    if claims > 1:
        return None
    return f"python -m derivations{command} " + json.dumps(argv)


def _derive(argv: list[str]) -> int:
    # Only a run that succeeded is stored, under its exact arguments: a hit
    # prints what that run printed, without importing SymPy.
    entry = _output_entry(argv)
    cached = derivation_cache.read(entry) if entry is not None else None
    if cached is not None:
        with contextlib.suppress(UnicodeDecodeError):
            sys.stdout.write(cached.decode())
            return 0

    from derivations.catalog import LAYERS, rows
    from derivations.notation import DEFAULT, Notation
    from derivations.render import FORMATS, standalone, too_wide

    parser = _derive_parser()
    args = parser.parse_args(argv)
    if args.standalone and args.format != "latex":
        parser.error("--standalone applies to --format latex")
    if args.layer and args.definition:
        parser.error("give --layer or --definition, not both")
    if not 0 < args.timeout <= 3600:
        parser.error("--timeout must be between 0 and 3600 seconds")
    try:
        notation = Notation.parse(args.notation)
    except ValueError as error:
        parser.error(str(error))
    key = _register(parser.prog, args.definition)
    if key == "":
        return 2
    keys = [args.layer] if args.layer else [key] if key else list(LAYERS)

    def render() -> tuple[str, str]:
        """The output, and where the notation takes a name the formulas use, why ("" where not)."""
        if notation != DEFAULT:
            try:
                notation.refuse_clashes((str(row["name"]), f"{row['latex']} {row['value']}") for row in rows(keys))
            except ValueError as error:
                return "", str(error)
        printed = rows(keys, notation)
        if args.standalone and notation != DEFAULT and (wide := too_wide(printed)):
            return "", wide
        text = FORMATS[args.format](printed)
        return (standalone(text) if args.standalone else text), ""

    try:
        text, clash = render() if key is None else _within(key, args.timeout, render)
    except Exception as error:
        print(f"{parser.prog}: error: {describe(error)}", file=sys.stderr)
        return 1
    if clash:
        parser.error(clash)
    if entry is not None:
        derivation_cache.write(entry, text.encode())
    sys.stdout.write(text)  # a failure to write is the caller's: `run` makes it one line
    if key:
        _left_out(parser.prog, key, args.timeout)
    return 0


def _derive_parser() -> OneLineParser:
    from derivations.catalog import LAYERS
    from derivations.notation import RENAMABLE
    from derivations.render import FORMATS

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
        help=f"print SYMBOL ({', '.join(RENAMABLE)}) as LATEX, e.g. n=N or epsilon=\\epsilon",
    )
    parser.add_argument("--definition", type=Path, metavar="FILE", help="derive the layer defined in a TOML file")
    parser.add_argument(
        "--timeout", type=float, default=300.0, metavar="SECONDS", help="with --definition: time budget (default: 300)"
    )
    parser.add_cache_option()
    return parser


def _check(argv: list[str]) -> int:
    # A run whose every verdict was decided (none an error, which may be a time or memory
    # bound) is stored with its status, keyed also by the code that re-checks a counterexample.
    entry = _output_entry(argv, " check", _CACHED_CHECK_OPTIONS)
    extra = _confirming_code() if entry is not None else b""
    cached = derivation_cache.read(entry, extra) if entry is not None else None
    if cached is not None:
        stored_status, _, stored = cached.partition(b"\n")
        with contextlib.suppress(UnicodeDecodeError, ValueError):
            status = int(stored_status)
            sys.stdout.write(stored.decode())
            return status

    parser = _check_parser()
    args = parser.parse_args(argv)
    if sum(given is not None for given in (args.claim, args.claims, args.latex)) != 1:
        parser.error("give one inline claim, --latex TEXT or --claims FILE")
    if args.claims is not None and args.assume:
        parser.error("--assume applies to an inline claim; a claims file gives assumptions per entry")
    if not 0 < args.timeout <= 3600:
        parser.error("--timeout must be between 0 and 3600 seconds")
    if args.layer and args.definition:
        parser.error("give --layer or --definition, not both")

    key = _register(parser.prog, args.definition)
    if key == "":
        return 2
    claims = _claims(parser.prog, args, key)
    if claims is None:
        return 2
    status, written, decided = _verdicts(claims, args.format, args.timeout)
    if entry is not None and decided:
        derivation_cache.write(entry, f"{status}\n{written}".encode(), extra)
    return status


def _check_parser() -> OneLineParser:
    from derivations.catalog import CORE, LAYERS
    from derivations.claims.render import VERDICT_FORMATS

    parser = OneLineParser(
        prog="python -m derivations check",
        description="Verdicts on claims: proved, refuted (with a counterexample), supported, or error. "
        "Exit status: 0 when every claim is proved or supported (or meets its expect), 1 when any is "
        "refuted (or misses its expect), 2 on an error verdict, bad usage or a failure to write.",
    )
    parser.add_argument("claim", nargs="?", help='a claim such as "slope_at_zero == 1/sqrt(epsilon)"')
    parser.add_argument("--claims", type=Path, metavar="FILE", help="a TOML file of [[claim]] entries")
    parser.add_argument(
        "--latex", metavar="TEXT", help=r"a claim in LaTeX, e.g. '\|J\|_2 \le \frac{1}{\sqrt{\epsilon}}'"
    )
    parser.add_argument(
        "--layer",
        choices=list(LAYERS),
        help=f"layer of an inline claim, and of a file's entries that name none (default: the --definition layer, "
        f"else {CORE})",
    )
    parser.add_argument("--assume", action="append", default=[], metavar="COND", help="assumption, e.g. 'n >= 3'")
    parser.add_argument("--format", choices=sorted(VERDICT_FORMATS), default="text", help="output format")
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="time budget per claim (default: 10)"
    )
    parser.add_argument("--definition", type=Path, metavar="FILE", help="claims about the layer defined in FILE")
    parser.add_cache_option()
    return parser


def _claims(prog: str, args: argparse.Namespace, key: str | None) -> list[Claim] | None:
    """The claims the arguments give, or None after printing why they cannot be read."""
    # Imported here: printing formulas needs none of the checker.
    from derivations.catalog import CORE
    from derivations.claims import Claim, ClaimError, latex, load

    layer = args.layer or key or CORE  # of an inline claim, and of a file's entries that name none
    try:
        if args.claims is not None:
            return load(args.claims, layer)
        text = args.claim if args.latex is None else latex.to_claim(args.latex)
        return [Claim(text, layer, tuple(args.assume), id="inline")]
    except ClaimError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return None


def _verdicts(claims: list[Claim], form: str, timeout: float) -> tuple[int, str, bool]:
    """Check each claim and write its verdict as it comes.  Returns the exit status, the text
    written, and whether every verdict was decided (none an error)."""
    from derivations.claims import STREAMS, check_each

    stream = STREAMS[form]
    written = [stream.head]
    sys.stdout.write(stream.head)
    status, decided = 0, True
    for number, verdict in enumerate(check_each(claims, confirm, timeout)):
        written.append((stream.between if number else "") + stream.row(verdict))
        sys.stdout.write(written[-1])
        sys.stdout.flush()
        decided = decided and verdict.verdict != "error"
        if not verdict.met:
            status = max(status, 2 if verdict.verdict in ("error", "vacuous") else 1)
    written.append(stream.tail)
    sys.stdout.write(stream.tail)
    return status, "".join(written), decided


def _confirming_code() -> bytes:
    """What a verdict depends on besides the derivations: the numeric code that re-checks a
    counterexample, and NumPy's version (read without importing it)."""
    return derivation_cache.code("numeric") + derivation_cache.package("numpy")


def confirm(claim: Claim, example: dict[str, Any]) -> str:
    """`derivations.claims.confirm.confirm`, imported only for a claim that has a counterexample to re-check."""
    from derivations.claims.confirm import confirm as numerically

    return numerically(claim, example)


def _register(prog: str, path: Path | None) -> str | None:
    """The key of the layer defined in ``path``, now in the catalog; None without a path, and
    "" after one line on stderr for a file that is not such a layer."""
    if path is None:
        return None
    from derivations import catalog, definition

    try:
        layer = definition.load(path).layer
        catalog.register(layer)
    except ValueError as error:
        print(f"{prog}: error: {definition.shown(str(path))}: {error}", file=sys.stderr)
        return ""
    return layer.key


def _left_out(prog: str, key: str, seconds: float) -> None:
    """Name on stderr each row a layer from a file lacks, and why (the output above has the rest)."""
    from derivations import quantities
    from derivations.catalog import LAYERS

    for name, why in _within(key, seconds, lambda: quantities.left_out(LAYERS[key])):
        print(f"{prog}: note: {key} has no {name} row: {why}", file=sys.stderr)


def _within(key: str, seconds: float, render: Callable[[], _T]) -> _T:
    """``render()`` in a child process bounded in time and memory: a user's layer may be pathological."""
    from derivations import definition
    from derivations.catalog import LAYERS

    done = definition.derive_within(LAYERS[key], seconds, render)
    assert done is not None
    return done


def _codegen(argv: list[str]) -> int:
    from derivations.catalog import LAYERS
    from derivations.codegen import TARGETS, emit

    parser = OneLineParser(
        prog="python -m derivations codegen",
        description="Print a self-contained module with a layer's derived forward and backward pass.",
    )
    parser.add_argument("--layer", required=True, choices=list(LAYERS), help="the layer")
    parser.add_argument("--target", required=True, choices=list(TARGETS), help="the language of the module")
    parser.add_cache_option()
    args = parser.parse_args(argv)
    try:
        source = emit(args.layer, args.target)
    except ValueError as error:  # a layer the emitted row code cannot be: say which to emit
        parser.error(str(error))
    sys.stdout.write(source)
    return 0


def _review(argv: list[str]) -> int:
    from derivations.catalog import LAYERS

    parser = OneLineParser(
        prog="python -m derivations review",
        description="Read every relation of a LaTeX paper, check it, and write review.md, review.json and "
        "review.pdf (where pdflatex is on PATH). "
        "Exit status: 0 when every checked relation is proved or supported, 1 when one is refuted, "
        "2 on an error verdict, bad input or usage.",
    )
    parser.add_argument("paper", type=Path, help="the paper's main .tex file (\\input files are followed)")
    parser.add_argument("--layer", choices=list(LAYERS), help="check every relation about this layer")
    parser.add_argument(
        "--notation", action="append", default=[], metavar="SYMBOL=LATEX", help="the paper's spelling, e.g. n=H"
    )
    parser.add_argument("--out", type=Path, help="folder of the report (default: the paper's folder)")
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="time budget per claim (default: 10)"
    )
    parser.add_cache_option()
    args = parser.parse_args(argv)
    if not 0 < args.timeout <= 3600:
        parser.error("--timeout must be between 0 and 3600 seconds")
    from derivations.review import classify, document, report
    from derivations.review.notation import Notation

    try:
        paper = document.read(args.paper)
        notation = Notation.parse([*paper.notation, *args.notation])
    except (document.DocumentError, ValueError) as error:
        parser.error(str(error))
    context = classify.Context(notation, args.layer, args.timeout, args.layer or "layernorm")
    entries = classify.review(paper, context, _progress(len(paper.relations)))
    title = args.paper.name
    folder = args.out if args.out is not None else args.paper.resolve().parent
    from derivations.review import pdf

    built = pdf.build(entries, title)
    outputs: dict[str, str | bytes] = {
        "review.md": report.markdown(entries, title, (built.note,)),
        "review.json": report.as_json(entries, title),
    }
    if built.pdf is not None:
        outputs["review.pdf"] = built.pdf
    report.write(folder, outputs)
    counts = report.summary(entries)
    described = ", ".join(f"{n} {name}" for name, n in {**counts["classes"], **counts["verdicts"]}.items() if n)
    sys.stdout.write(f"{title}: {len(entries)} relations ({described}); wrote {folder / 'review.md'}\n")
    return report.status(entries)


def _progress(total: int) -> Callable[[int], Any] | None:
    """A progress bar on stderr for more than a handful of relations, where stderr is a terminal."""
    if total <= 5 or sys.stderr is None or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="relation", file=sys.stderr, leave=False)
    return bar.update


def _identify(argv: list[str]) -> int:
    parser = OneLineParser(
        prog="python -m derivations identify",
        description="Name the catalog layer a written definition equals, checked against every layer.",
    )
    parser.add_argument("--latex", metavar="TEXT", help=r"the definition, e.g. 'y = \frac{x - \mu}{\sigma + \epsilon}'")
    parser.add_argument("--definition", type=Path, metavar="FILE", help="a file holding the LaTeX definition")
    parser.add_argument("--notation", action="append", default=[], metavar="SYMBOL=LATEX", help="e.g. n=H")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help="time budget per layer")
    parser.add_cache_option()
    args = parser.parse_args(argv)
    if (args.latex is None) == (args.definition is None):
        parser.error("give --latex TEXT or --definition FILE")
    if not 0 < args.timeout <= 3600:
        parser.error("--timeout must be between 0 and 3600 seconds")
    from derivations.claims import ClaimError
    from derivations.files import Unreadable, read_capped
    from derivations.review.identify import describe, identify
    from derivations.review.notation import Notation

    try:
        text = args.latex if args.latex is not None else read_capped(args.definition, 100_000).decode()
        found = identify(" ".join(text.split()), Notation.parse(args.notation), args.timeout)
    except (ClaimError, ValueError, Unreadable) as error:
        parser.error(" ".join(str(error).split()))
    sys.stdout.write(f"read as: y == {found.expression}\n{describe(found)}\n")
    return 0 if found.key is not None else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["review"]:
        return _review(argv[1:])
    if argv[:1] == ["identify"]:
        return _identify(argv[1:])
    if argv[:1] == ["check"]:
        return _check(argv[1:])
    if argv[:1] == ["codegen"]:
        return _codegen(argv[1:])
    return _derive(argv)


if __name__ == "__main__":
    from derivations.cli import finish

    finish(main, _prog())
