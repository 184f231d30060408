"""Command line.

``python -m derivations [derive] [--layer KEY | --definition FILE] [--formula NAME ...]
[--format text|markdown|json|latex|conventions] [--standalone] [--notation SYMBOL=LATEX ...]``
prints every derived formula (or those ``--formula`` selects, by name or glob);
``python -m derivations check CLAIM ...`` gives verdicts on claims (``-`` reads them from
standard input, one a line); ``codegen`` prints a layer's derived forward and backward pass as a
module; ``review`` checks a LaTeX paper; ``identify`` names the layer a definition equals.
``python -m derivations --help`` lists them, each command's ``--help`` its options, and
``--version`` the installed version.  The console script (`entry`) is the same command.
"""

# ruff: noqa: E402 - the Ctrl-C handler is installed before the other imports
from __future__ import annotations

import sys

from derivations import interrupts

# The command's name in its messages; the console script (`entry`) names itself instead.
_NAME = "python -m derivations"
# Every command, with the one line ``--help`` gives it; derive is the default.
COMMANDS = {
    "derive": "print every derived formula with its LaTeX (the default command)",
    "check": "verdicts on claims: proved, refuted (with a counterexample), supported or error",
    "codegen": "print a module with a layer's derived forward and backward pass (NumPy, PyTorch or C)",
    "review": "check every relation of a LaTeX paper and write review.md, review.json and review.pdf",
    "identify": "name the catalog layer a written definition equals",
}


def _prog(argv: list[str] | None = None) -> str:
    """The command's name in its messages: a subcommand's failures are named as its own usage errors are."""
    command = (sys.argv[1:] if argv is None else argv)[:1]
    return " ".join([_NAME, *command]) if command and command[0] in COMMANDS and command != ["derive"] else _NAME


if __name__ == "__main__":  # first: a Ctrl-C during the imports below is one line too
    interrupts.one_line(_prog())

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from derivations import cache as derivation_cache
from derivations.cli import OneLineParser, describe, progress, read_input, suggest

if TYPE_CHECKING:
    import argparse

    from derivations.claims import Claim

# The options a derive run's output depends on, besides the derivation
# sources, with how many values each takes.  Arguments made of these alone
# are looked up in the derivation cache; any other (a file to read, a new
# option) takes the whole way.
_CACHED_OPTIONS = {"--format": 1, "--layer": 1, "--notation": 1, "--standalone": 0, "--formula": 1}
# The same for a check of inline claims: the claim itself is the one value without an option.
_CACHED_CHECK_OPTIONS = {"--latex": 1, "--layer": 1, "--assume": 1, "--format": 1, "--timeout": 1}
# The name of standard input where a file or a claim is expected.
STDIN = "-"
# Bytes of claims read from standard input by ``check -``, one a line.
CLAIMS_LIMIT = 1 << 20
# Bytes of a LaTeX definition ``identify --definition`` reads.
LATEX_LIMIT = 100_000
_T = TypeVar("_T")


def _output_entry(argv: list[str], command: str = "", options: dict[str, int] = _CACHED_OPTIONS) -> str | None:
    """The cache entry of a run's whole output for ``argv``, or None where it is not cached."""
    position, claims = 0, 0
    while position < len(argv):
        option, joined, _ = argv[position].partition("=")
        if command and not option.startswith("-"):
            claims, position = claims + 1, position + 1  # an inline claim
            continue
        if command and option == STDIN:
            return None  # claims from standard input: not in the arguments
        if option not in options or (joined and not options[option]):
            return None
        position += 1 + (0 if joined else options[option])
    if claims > 1:
        return None
    return f"python -m derivations{command} " + json.dumps(argv)


# --- the parser ----------------------------------------------------------------------------


class _Command(OneLineParser):
    """A subcommand's parser, its arguments added when it is first used (``fill``): the check's
    need the checker, which printing formulas never imports."""

    def __init__(self, *args: Any, fill: Callable[[OneLineParser], None] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fill = fill

    def filled(self) -> _Command:
        fill, self._fill = self._fill, None
        if fill is not None:
            fill(self)
        return self

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.filled()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self.filled()
        return super().format_help()

    def format_usage(self) -> str:
        self.filled()
        return super().format_usage()


def _parser() -> tuple[OneLineParser, dict[str, _Command]]:
    """The command line: derive's options, ``--version`` and a subparser per command; each
    command's arguments are added when it is used."""
    parser = OneLineParser(
        prog=_NAME,
        description="Print every derived formula with its LaTeX (the options below), or run a command.",
        epilog=f"'{_NAME} COMMAND --help' gives a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"epsilon-layernorm {version()}")
    _derive_arguments(parser)
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND", parser_class=_Command)
    fills: dict[str, Callable[[OneLineParser], None] | None] = {
        "derive": None,
        "check": _check_arguments,
        "codegen": _codegen_arguments,
        "review": _review_arguments,
        "identify": _identify_arguments,
    }
    sub: dict[str, _Command] = {}
    for name, line in COMMANDS.items():
        sub[name] = commands.add_parser(
            name, prog=f"{_NAME} {name}" if name != "derive" else _NAME, help=line, fill=fills[name]
        )
    return parser, sub


def version() -> str:
    """The installed package's version, else the one pyproject.toml beside the package gives."""
    import importlib.metadata

    try:
        return importlib.metadata.version("epsilon-layernorm")
    except importlib.metadata.PackageNotFoundError:
        pass
    import tomllib

    try:
        with open(Path(__file__).resolve().parents[1] / "pyproject.toml", "rb") as file:
            return str(tomllib.load(file)["project"]["version"])
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return "unknown"


def _parse(parser: OneLineParser, argv: list[str], intermixed: bool = False) -> argparse.Namespace:
    """``argv`` parsed: what is left over is named in one line by the parser of the command it follows."""
    if intermixed:
        args, left = parser.parse_known_intermixed_args(argv)
    else:
        args, left = parser.parse_known_args(argv)
    if left:
        parser.error(f"unrecognized arguments: {' '.join(left)}")
    return args


def _after_options(parser: OneLineParser, argv: list[str], command: str) -> int:
    """A command named after derive's options: run as if named first, where those options are only
    ``--no-cache`` (which every command takes); else one line that says to name it first."""
    before = argv[: argv.index(command)] if command in argv else argv
    if all(option == "--no-cache" for option in before):
        return main([command, *before, *argv[len(before) + 1 :]])
    parser.error(f"argument COMMAND: name {command} first, then its options ({_NAME} {command} --help)")
    raise AssertionError  # parser.error exits


# --- derive ----------------------------------------------------------------------------------


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

    parser, _ = _parser()
    args = _parse(parser, argv)
    if args.command not in (None, "derive"):
        return _after_options(parser, argv, args.command)
    if args.standalone and args.format != "latex":
        parser.error("--standalone applies to --format latex")
    if args.layer and args.definition:
        parser.error("give --layer or --definition, not both")
    try:
        notation = Notation.parse(args.notation)
    except ValueError as error:
        parser.error(str(error))
    key = _register(parser.prog, args.definition)
    if key == "":
        return 2
    keys = [args.layer] if args.layer else [key] if key else list(LAYERS)
    keys, unmatched = _layers_selected(keys, args.formula)
    if unmatched:
        parser.error(unmatched)

    def render() -> tuple[str, str]:
        """The output, and where the notation takes a name the formulas use or a --formula
        selects none, why ("" where not)."""
        derived = _rows(keys) if key is None else rows(keys)
        if notation != DEFAULT:
            try:
                notation.refuse_clashes((str(row["name"]), f"{row['latex']} {row['value']}") for row in derived)
            except ValueError as error:
                return "", str(error)
        printed = derived if notation == DEFAULT else rows(keys, notation)
        printed, unmatched = _formulas_selected(printed, args.formula)
        if unmatched:
            return "", unmatched
        if args.standalone and notation != DEFAULT and (wide := too_wide(printed)):
            return "", wide
        text = FORMATS[args.format](printed)
        if args.formula and args.format == "conventions":
            text = _columns_selected(text)
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


def _derive_arguments(parser: OneLineParser) -> None:
    from derivations.catalog import LAYERS
    from derivations.notation import RENAMABLE
    from derivations.render import FORMATS

    parser.add_argument("--format", choices=sorted(FORMATS), default="text", help="output format (default: text)")
    parser.add_argument("--layer", choices=list(LAYERS), help="print one layer (default: every layer)")
    parser.add_argument(
        "--formula",
        action="append",
        default=[],
        metavar="NAME",
        help="print only the formulas NAME names, in any format: a name or a glob, 'layernorm.jacobian', "
        "'layernorm.jac*', '*.slope_at_zero' (a NAME without a dot is a formula's name in every layer); "
        "may be given more than once",
    )
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
    parser.add_argument(
        "--definition", type=Path, metavar="FILE", help="derive the layer defined in a TOML file (- reads stdin)"
    )
    parser.add_timeout_option(300.0, "with --definition: time budget (default: 300)")
    parser.add_cache_option()


def _layers_selected(keys: list[str], patterns: list[str]) -> tuple[list[str], str]:
    """The layers of ``keys`` a formula of which ``patterns`` may select (all, without patterns),
    and why none may for a pattern that names a layer ("" where each may)."""
    if not patterns:
        return keys, ""
    from fnmatch import fnmatchcase

    selected = set()
    for pattern in patterns:
        if "." not in pattern:  # a formula's name in every layer, or a glob across the dot
            selected |= set(keys)
            continue
        layer, _, name = pattern.partition(".")
        found = {key for key in keys if fnmatchcase(key, layer)}
        if not found:
            near = suggest(layer, keys)
            hint = f"; did you mean {near + '.' + name!r}?" if near else ""
            return [], f"argument --formula: {pattern!r} names no layer of {', '.join(keys)}{hint}"
        selected |= found
    return [key for key in keys if key in selected], ""


def _selects(qualified: str, pattern: str) -> bool:
    """Whether ``pattern`` selects the formula ``qualified`` (``layer.name``): as a glob on the whole,
    or, without a dot, on the formula's own name."""
    from fnmatch import fnmatchcase

    return fnmatchcase(qualified, pattern) or ("." not in pattern and fnmatchcase(qualified.partition(".")[2], pattern))


def _formulas_selected(rows: list[dict[str, object]], patterns: list[str]) -> tuple[list[dict[str, object]], str]:
    """The rows ``patterns`` select, in order, and why a pattern selects none ("" where each selects one)."""
    if not patterns:
        return rows, ""
    names = [str(row["name"]) for row in rows]
    chosen: set[str] = set()
    for pattern in patterns:
        found = {name for name in names if _selects(name, pattern)}
        if not found:
            known = names if "." in pattern else [*names, *(name.partition(".")[2] for name in names)]
            near = suggest(pattern, known)
            hint = f"; did you mean {near!r}?" if near else ""
            return [], f"argument --formula: {pattern!r} matches no formula{hint}"
        chosen |= found
    return [row for row in rows if row["name"] in chosen], ""


def _columns_selected(table: str) -> str:
    """The conventions table without the columns no selected formula fills (each cell "—"): a
    markdown table's cells hold no bare " | ", so its lines split there."""
    lines = table.splitlines()
    if len(lines) < 3:
        return table
    cells = [line[2:-2].split(" | ") for line in lines[:1] + lines[2:]]
    kept = [column for column in range(len(cells[0])) if column < 2 or any(row[column] != "—" for row in cells[1:])]
    shown = ["| " + " | ".join(row[column] for column in kept) + " |" for row in cells]
    return "\n".join([shown[0], "|" + "---|" * len(kept), *shown[1:]]) + "\n"


def _rows(keys: list[str]) -> list[dict[str, object]]:
    """`derivations.catalog.rows` of the catalog's layers, with a progress bar on a terminal's
    stderr that ticks once per layer derived."""
    from derivations.catalog import rows

    bar = progress(len(keys), "layer", "deriving") if len(keys) > 1 else None
    if bar is None:
        return rows(keys)
    try:
        return rows(keys, progress=bar.update)
    finally:
        bar.close()


# --- check -----------------------------------------------------------------------------------


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

    parser = _parser()[1]["check"].filled()
    # Claims and options in any order: check "a" --layer rmsnorm "b".
    args = _parse(parser, argv, intermixed=True)
    return _run_check(parser, args, entry, extra)


def _run_check(parser: OneLineParser, args: argparse.Namespace, entry: str | None = None, extra: bytes = b"") -> int:
    if sum(given for given in (bool(args.claim), args.claims is not None, args.latex is not None)) != 1:
        parser.error("give inline claims, --latex TEXT or --claims FILE")
    if args.claims is not None and args.assume:
        parser.error("--assume applies to inline claims; a claims file gives assumptions per entry")
    if args.layer and args.definition:
        parser.error("give --layer or --definition, not both")
    readers = [name for name, given in _stdin_readers(args) if given]
    if len(readers) > 1:
        parser.error(f"standard input is read once: give - to one of {' and '.join(readers)}")

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


def _stdin_readers(args: argparse.Namespace) -> list[tuple[str, bool]]:
    """Each argument of a check that may read standard input, and whether it does."""
    return [
        ("a claim", STDIN in (args.claim or [])),
        ("--claims", str(args.claims) == STDIN),
        ("--definition", str(args.definition) == STDIN),
    ]


def _check_arguments(parser: OneLineParser) -> None:
    from derivations.catalog import CORE, LAYERS
    from derivations.claims.render import VERDICT_FORMATS

    parser.description = (
        "Verdicts on claims: proved, refuted (with a counterexample), supported, or error. "
        "Exit status: 0 when every claim is proved or supported (or meets its expect), 1 when any is "
        "refuted (or misses its expect), 2 on an error verdict, bad usage or a failure to write."
    )
    parser.add_argument(
        "claim",
        nargs="*",
        help='claims such as "slope_at_zero == 1/sqrt(epsilon)" or "lipschitz <= 1/sqrt(epsilon)", each '
        "checked in turn; - reads them from standard input, one a line (blank lines and # comments skipped)",
    )
    parser.add_argument(
        "--claims", type=Path, metavar="FILE", help="a TOML file of [[claim]] entries (- reads standard input)"
    )
    parser.add_argument(
        "--latex", metavar="TEXT", help=r"a claim in LaTeX, e.g. '\|J\|_2 \le \frac{1}{\sqrt{\epsilon}}'"
    )
    parser.add_argument(
        "--layer",
        choices=list(LAYERS),
        help=f"layer of inline claims, and of a file's entries that name none (default: the --definition layer, "
        f"else {CORE})",
    )
    parser.add_argument(
        "--assume", action="append", default=[], metavar="COND", help="assumption of inline claims, e.g. 'n >= 3'"
    )
    parser.add_argument(
        "--format", choices=sorted(VERDICT_FORMATS), default="text", help="output format (default: text)"
    )
    parser.add_timeout_option(10.0, "time budget per claim (default: 10)")
    parser.add_argument(
        "--definition", type=Path, metavar="FILE", help="claims about the layer defined in FILE (- reads stdin)"
    )
    parser.add_cache_option()


def _claims(prog: str, args: argparse.Namespace, key: str | None) -> list[Claim] | None:
    """The claims the arguments give, or None after printing why they cannot be read."""
    # Imported here: printing formulas needs none of the checker.
    from derivations.catalog import CORE
    from derivations.claims import Claim, ClaimError, latex, load

    layer = args.layer or key or CORE  # of inline claims, and of a file's entries that name none
    try:
        if args.claims is not None:
            return _known_layers(load(args.claims, layer))
        if args.latex is not None:
            return [Claim(latex.to_claim(args.latex), layer, tuple(args.assume), id="inline")]
    except ClaimError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return None
    texts: list[tuple[str, str]] = []  # (id, claim)
    for number, text in enumerate(args.claim, 1):
        if text != STDIN:
            texts.append((f"inline-{number}" if len(args.claim) > 1 else "inline", text))
            continue
        try:
            texts += _claims_read(read_input(CLAIMS_LIMIT))
        except ValueError as error:
            print(f"{prog}: error: argument claim: {error}", file=sys.stderr)
            return None
    return [Claim(text, layer, tuple(args.assume), id=identifier) for identifier, text in texts]


def _claims_read(data: bytes) -> list[tuple[str, str]]:
    """The claims of ``data``, one a line, each with its id ``stdin-LINE``: blank lines and lines
    that start with # are skipped.  ValueError where it is not UTF-8 or holds no claim."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"standard input is not UTF-8 text (byte {error.start})") from None
    found = [
        (f"stdin-{number}", line.strip())
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not found:
        raise ValueError("standard input holds no claim (one a line; blank lines and # comments are skipped)")
    return found


def _known_layers(claims: list[Claim]) -> list[Claim]:
    """``claims``, each that names a layer the catalog lacks marked with the layer it likely meant."""
    from dataclasses import replace

    from derivations.catalog import LAYERS

    out = []
    for claim in claims:
        if claim.problem is None and claim.layer not in LAYERS:
            near = suggest(claim.layer, LAYERS)
            hint = f"; did you mean {near!r}?" if near else ""
            problem = f"layer {claim.layer!r} is not a layer of the catalog{hint} (known: {', '.join(LAYERS)})"
            claim = replace(claim, problem=problem)
        out.append(claim)
    return out


def _verdicts(claims: list[Claim], form: str, timeout: float) -> tuple[int, str, bool]:
    """Check each claim and write its verdict as it comes, with a progress bar on a terminal's
    stderr where there are several.  Returns the exit status, the text written, and whether
    every verdict was decided (none an error)."""
    from derivations.claims import STREAMS, check_each

    stream = STREAMS[form]
    written = [stream.head]
    sys.stdout.write(stream.head)
    status, decided = 0, True
    bar = progress(len(claims), "claim", "checking") if len(claims) > 1 else None
    verdicts = check_each(claims, confirm, timeout)
    shown = 0
    try:
        for number, verdict in enumerate(verdicts):
            written.append((stream.between if number else "") + stream.row(verdict))
            if bar is not None:
                bar.clear()  # on a terminal, the verdict's lines are not written over the bar
            decided = decided and verdict.verdict != "error"
            if not verdict.met:
                status = max(status, 2 if verdict.verdict in ("error", "vacuous") else 1)
            sys.stdout.write(written[-1])
            sys.stdout.flush()
            shown += 1
            if bar is not None:
                bar.update(1)
    except BrokenPipeError:
        # The reader stopped early (| head -1): the claims after it are not decided, so the
        # status cannot say that every claim holds (an undecided claim is status 2).
        return (2 if shown + 1 < len(claims) else status), "".join(written), False
    finally:
        verdicts.close()  # the children still deciding end with it
        if bar is not None:
            bar.close()
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
    """The key of the layer defined in ``path`` (``-``: standard input), now in the catalog; None
    without a path, and "" after one line on stderr for a file that is not such a layer."""
    if path is None:
        return None
    from derivations import catalog, definition

    try:
        if str(path) == STDIN:
            try:
                source = read_input(definition.MAX_BYTES)
            except ValueError as error:
                print(f"{prog}: error: argument --definition: {error}", file=sys.stderr)
                return ""
            layer = definition.loads(source).layer
        else:
            layer = definition.load(path).layer
        catalog.register(layer)
    except ValueError as error:
        name = "standard input" if str(path) == STDIN else definition.shown(str(path))
        print(f"{prog}: error: {name}: {error}", file=sys.stderr)
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


# --- codegen, review, identify ----------------------------------------------------------------


def _codegen(argv: list[str]) -> int:
    parser = _parser()[1]["codegen"].filled()
    return _run_codegen(parser, _parse(parser, argv))


def _codegen_arguments(parser: OneLineParser) -> None:
    from derivations.catalog import LAYERS
    from derivations.codegen import TARGETS

    parser.description = "Print a self-contained module with a layer's derived forward and backward pass."
    parser.add_argument("--layer", required=True, choices=list(LAYERS), help="the layer")
    parser.add_argument("--target", required=True, choices=list(TARGETS), help="the language of the module")
    parser.add_cache_option()


def _run_codegen(parser: OneLineParser, args: argparse.Namespace) -> int:
    from derivations.codegen import emit

    try:
        source = emit(args.layer, args.target)
    except ValueError as error:  # a layer the emitted row code cannot be: say which to emit
        parser.error(str(error))
    sys.stdout.write(source)
    return 0


def _review(argv: list[str]) -> int:
    parser = _parser()[1]["review"].filled()
    return _run_review(parser, _parse(parser, argv))


def _review_arguments(parser: OneLineParser) -> None:
    from derivations.catalog import LAYERS

    parser.description = (
        "Read every relation of a LaTeX paper, check it, and write review.md, review.json and "
        "review.pdf (where pdflatex is on PATH). "
        "Exit status: 0 when every checked relation is proved or supported, 1 when one is refuted, "
        "2 on an error verdict, bad input or usage."
    )
    parser.add_argument("paper", type=Path, help="the paper's main .tex file (\\input files are followed)")
    parser.add_argument("--layer", choices=list(LAYERS), help="check every relation about this layer")
    parser.add_argument(
        "--notation", action="append", default=[], metavar="SYMBOL=LATEX", help="the paper's spelling, e.g. n=H"
    )
    parser.add_argument("--out", type=Path, help="folder of the report (default: the paper's folder)")
    parser.add_timeout_option(10.0, "time budget per claim (default: 10)")
    parser.add_cache_option()


def _run_review(parser: OneLineParser, args: argparse.Namespace) -> int:
    from derivations.review import classify, document, report
    from derivations.review.notation import Notation

    try:
        paper = document.read(args.paper)
        notation = Notation.parse([*paper.notation, *args.notation])
    except (document.DocumentError, ValueError) as error:
        parser.error(str(error))
    context = classify.Context(notation, args.layer, args.timeout, args.layer or "layernorm")
    entries = classify.review(paper, context, _progress)
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
    found = (
        f"{len(entries)} relations ({described})"
        if entries
        else "no relation found (no displayed or inline math with =, <, >)"
    )
    sys.stdout.write(f"{title}: {found}; wrote {', '.join(str(folder / name) for name in outputs)}\n")
    return report.status(entries)


def _progress(total: int) -> Callable[[int], Any] | None:
    """A progress bar's update, on stderr for more than a handful of links where it is a terminal."""
    if total <= 5:
        return None
    bar = progress(total, "relation", "reviewing")
    return bar.update if hasattr(bar, "n") else None


def _identify(argv: list[str]) -> int:
    parser = _parser()[1]["identify"].filled()
    return _run_identify(parser, _parse(parser, argv))


def _identify_arguments(parser: OneLineParser) -> None:
    parser.description = "Name the catalog layer a written definition equals, checked against every layer."
    parser.add_argument("--latex", metavar="TEXT", help=r"the definition, e.g. 'y = \frac{x - \mu}{\sigma + \epsilon}'")
    parser.add_argument(
        "--definition", type=Path, metavar="FILE", help="a file holding the LaTeX definition (- reads stdin)"
    )
    parser.add_argument("--notation", action="append", default=[], metavar="SYMBOL=LATEX", help="e.g. n=H")
    parser.add_timeout_option(10.0, "time budget per layer (default: 10)")
    parser.add_cache_option()


def _run_identify(parser: OneLineParser, args: argparse.Namespace) -> int:
    if (args.latex is None) == (args.definition is None):
        parser.error("give --latex TEXT or --definition FILE")
    from derivations.claims import ClaimError
    from derivations.files import Unreadable, read_capped
    from derivations.review.identify import describe, identify
    from derivations.review.notation import Notation

    try:
        if args.latex is not None:
            text = args.latex
        elif str(args.definition) == STDIN:
            try:
                text = read_input(LATEX_LIMIT).decode()
            except ValueError as error:
                parser.error(f"argument --definition: {' '.join(str(error).split())}")
        else:
            try:
                text = read_capped(args.definition, LATEX_LIMIT).decode()
            except UnicodeDecodeError:
                parser.error(f"argument --definition: {args.definition}: a binary file, not LaTeX (not UTF-8)")
            except (OSError, Unreadable) as error:
                reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
                parser.error(f"argument --definition: {args.definition}: {' '.join(reason.split())}")
        if not text.strip():
            parser.error("the definition is empty: write y = ... (e.g. y = \\frac{x - \\mu}{\\sigma + \\epsilon})")
        found = identify(" ".join(text.split()), Notation.parse(args.notation), args.timeout)
    except (ClaimError, ValueError, Unreadable) as error:
        parser.error(" ".join(str(error).split()))
    sys.stdout.write(f"read as: y == {found.expression}\n{describe(found)}\n")
    return 0 if found.key is not None else 1


# --- dispatch ----------------------------------------------------------------------------------

_RUN: dict[str, Callable[[list[str]], int]] = {
    "check": _check,
    "codegen": _codegen,
    "review": _review,
    "identify": _identify,
}


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); its exit status.  A usage error
    raises SystemExit(2) after one line on stderr."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["derive"]:
        return _derive(argv[1:])
    if argv[:1] and argv[0] in _RUN:
        return _RUN[argv[0]](argv[1:])
    return _derive(argv)


def _script_name() -> str:
    """The console script's name as it was run (``epsilon-layernorm`` where that cannot be read)."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return name if name and not name.endswith(".py") and not name.startswith("-") else "epsilon-layernorm"


def entry() -> NoReturn:
    """The console script (``[project.scripts]``): `main` under its own name, as ``python -m
    derivations`` runs it; exits with its status (`derivations.cli.finish`)."""
    global _NAME
    _NAME = _script_name()
    interrupts.one_line(_prog())
    from derivations.cli import finish

    finish(main, _prog())


if __name__ == "__main__":
    from derivations.cli import finish

    finish(main, _prog())
