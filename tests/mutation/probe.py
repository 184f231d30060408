"""Which tests run a mutant's line: probes in the unmutated tree, one run of the tier, one log.

Before the mutants run, a probe statement goes in front of the statement each
sampled mutant changes (`insert`), and make test's tier runs once on the
probed tree.  A probe that runs writes its number and the test running it
(pytest's ``PYTEST_CURRENT_TEST``, which the processes a test starts inherit)
to a log (`hit`); `read` turns the log into each probe's tests.  A mutant's
first tests are then the ones that ran its statement (`pytest_collection_modifyitems`
keeps only those), so that one that some test kills is killed in seconds,
rather than by make test's whole tier after the tests that name its module.

This file is put on the tests' path, outside the tree, as the module
``_mutation_probe``: the probes import it, and pytest loads it as a plugin
(``-p _mutation_probe``).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

LOG = "MUTATION_PROBE_LOG"  # where probes write: "number<TAB>test" a line
ONLY = "MUTATION_ONLY"  # a file of test ids: the run keeps these (and the doctests of MUTATION_MODULE)
EXCEPT = "MUTATION_EXCEPT"  # a file of test ids: the run leaves these out
MODULE = "MUTATION_MODULE"  # the mutated module's path, whose doctests ONLY keeps
FIXTURE = "MUTATION_FIXTURE"  # the fixture being set up, while one is
FAILED = "MUTATION_FAILED"  # where a run writes the tests that fail, and "COLLECT <path>" for a file that does not
OUTSIDE = ""  # the test of a probe run outside any test: on import, or deriving before the first
USES = "@"  # a log line "@fixture<TAB>test": the test uses the fixture
TIMED = "%"  # a log line "%test<TAB>seconds": one phase of the test (set-up, call, tear-down) took that long

_seen: set[tuple[int, str, str]] = set()


def hit(number: int) -> None:
    """Log that probe ``number`` ran, under the test running and the fixture being set up (a
    fixture set up once for many tests runs under the first): once a test a process."""
    test = os.environ.get("PYTEST_CURRENT_TEST", OUTSIDE).rsplit(" (", 1)[0]  # drop " (call)"
    fixture = os.environ.get(FIXTURE, "")
    if (number, test, fixture) in _seen:
        return
    _seen.add((number, test, fixture))
    _write(f"{number}\t{test}\t{fixture}\n")


def _write(text: str) -> None:
    log = os.environ.get(LOG)
    if log:
        with open(log, "a", encoding="utf-8") as out:  # one append a call: whole under O_APPEND
            out.write(text)


def _statements(tree: ast.AST) -> list[ast.stmt]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def site(source: str, first: int, last: int) -> int | None:
    """The line (1-based) a probe for lines ``first`` .. ``last`` goes in front of: the start of the
    innermost statement holding them all where a line put there compiles; None where none is."""
    lines = source.splitlines(keepends=True)
    while first < last and _blank(lines[first - 1]):  # a change's own blank lines hold no statement
        first += 1
    while last > first and _blank(lines[last - 1]):
        last -= 1
    spans = [(_start(node), node.end_lineno or node.lineno, node) for node in _statements(ast.parse(source))]
    holding = sorted(
        ((start, node) for start, end, node in spans if start <= first and end >= last),
        key=lambda pair: (-pair[0], (pair[1].end_lineno or pair[0]) - pair[0]),  # innermost first
    )
    for line, node in holding:
        indent = lines[line - 1][: node.col_offset]
        if indent.strip():  # not first on its line: `if a: b`, `a; b`
            continue
        probed = "".join([*lines[: line - 1], _probe(indent, 0), *lines[line - 1 :]])
        try:
            compile(probed, "<probe>", "exec")
        except SyntaxError:  # in front of an elif or an except
            continue
        return line
    return None


def _blank(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _start(node: ast.stmt) -> int:
    """The line a statement starts on: a decorated definition's first decorator."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(decorator.lineno for decorator in decorators)])


def _probe(indent: str, number: int) -> str:
    return (
        f"{indent}try: __import__('_mutation_probe').hit({number})\n"
        f"{indent}except Exception: pass  # a process without the probes' path, a full disk: the code runs on\n"
    )


def insert(source: str, sites: dict[int, int]) -> str:
    """``source`` with probe ``number`` in front of line ``line`` for each ``line: number`` of ``sites``."""
    lines = source.splitlines(keepends=True)
    for line in sorted(sites, reverse=True):  # from the end, so that the lines above keep their numbers
        start = lines[line - 1]
        indent = start[: len(start) - len(start.lstrip())]
        lines.insert(line - 1, _probe(indent, sites[line]))
    return "".join(lines)


def read(log: Path) -> dict[int, set[str]]:
    """Each probe's tests, ``OUTSIDE`` among them where it ran outside any test: those running it,
    and those using a fixture whose set-up ran it."""
    ran: dict[int, set[str]] = {}
    under: dict[int, set[str]] = {}  # probe -> the fixtures whose set-up ran it
    users: dict[str, set[str]] = {}  # fixture -> the tests using it
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            first, _, rest = line.partition("\t")
            test, _, fixture = rest.partition("\t")
            if first.startswith(USES):
                users.setdefault(first.removeprefix(USES), set()).add(test)
            elif first.isdigit():
                ran.setdefault(int(first), set()).add(test)
                if fixture:
                    under.setdefault(int(first), set()).add(fixture)
    for number, fixtures in under.items():
        for fixture in fixtures:
            ran[number] |= users.get(fixture, set())
    return ran


def durations(log: Path) -> dict[str, float]:
    """Each test's seconds in the probed run (set-up, call and tear-down), by its id."""
    out: dict[str, float] = {}
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            if line.startswith(TIMED):
                test, _, seconds = line.removeprefix(TIMED).rpartition("\t")
                out[test] = out.get(test, 0.0) + float(seconds)
    return out


def _listed(variable: str) -> set[str] | None:
    path = os.environ.get(variable)
    return None if path is None else set(Path(path).read_text(encoding="utf-8").splitlines())


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> Iterator[None]:
    """While a fixture is set up, in a probed run: its name in FIXTURE, for the probes it runs."""
    if not os.environ.get(LOG):
        yield
        return
    before = os.environ.get(FIXTURE)
    os.environ[FIXTURE] = fixturedef.argname
    try:
        yield
    finally:
        if before is None:
            del os.environ[FIXTURE]
        else:
            os.environ[FIXTURE] = before


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a probed run, log the fixtures each test uses; else keep the tests ONLY lists (and the
    mutated module's doctests), or leave out those EXCEPT lists."""
    only, leave, module = _listed(ONLY), _listed(EXCEPT), os.environ.get(MODULE)
    if only is None and leave is None:
        return
    kept, dropped = [], []
    for item in items:
        doctest = module is not None and item.nodeid.split("::")[0] == module
        if (only is None or item.nodeid in only or doctest) and (leave is None or item.nodeid not in leave):
            kept.append(item)
        else:
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_finish(session: pytest.Session) -> None:
    """In a probed run, log the fixtures each test run uses (the tests a marker leaves out are gone)."""
    if os.environ.get(LOG):
        _write("".join(f"{USES}{name}\t{item.nodeid}\n" for item in session.items for name in _fixtures(item)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test that fails, by its id: pytest's summary cuts an id at its first space.  In a probed
    run, how long each phase of each test took (logged once: by pytest-xdist's controller, not
    again by the worker that ran it)."""
    if report.failed:
        _failed(report.nodeid)
    if os.environ.get(LOG) and not os.environ.get("PYTEST_XDIST_WORKER"):
        _write(f"{TIMED}{report.nodeid}\t{report.duration:.6f}\n")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _failed(f"COLLECT {report.nodeid}")


def _failed(text: str) -> None:
    path = os.environ.get(FAILED)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(text + "\n")


def _fixtures(item: pytest.Item) -> list[str]:
    return list(getattr(item, "fixturenames", ()))
