"""Mutation testing: a seeded sample of cosmic-ray's mutants of derivations/, numeric/ and figures/.

Every mutant cosmic-ray's operators can make in the three packages is listed,
ordered by a hash of the seed and of what names the mutant (its file, operator
and line, not its place), so that an edit elsewhere does not change which of the
others are drawn; the first ``--sample`` of them
that change what the code does (not only an annotation) are run.  Each is
written into a copy of the tree, and the test suite runs on it with ``-x``:
first the mutated module's doctests and the test files that name it, then,
if those pass, each tier named by ``--tiers`` in turn (make test's, then make
test-slow's).  The runs share one derivation cache, warmed before the first
mutant: a mutant outside derivations/ reads the unmutated derivations from it,
and one inside derives under a key of its own, in a folder removed after it.
A mutant that no test fails survives, and
must be killed by a new test or listed in ``equivalent.txt`` with the reason
no input can tell it apart.  Exit status 1 when an unlisted mutant survives or
the score is below ``--fail-under``.

    python tests/mutation/run.py --sample 100 --seed 15
"""

from __future__ import annotations

import argparse
import ast
import difflib
import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generic
import probe

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("derivations", "numeric", "figures")
EQUIVALENT = Path(__file__).with_name("equivalent.txt")
SEPARATOR = " :: "


@functools.cache
def cosmic_operators() -> tuple[str, ...]:
    """cosmic-ray's operators but those that take arguments (VariableReplacer, VariableInserter),
    which need names chosen per module.  cosmic-ray is imported here, where mutants are drawn:
    the rest of the runner (running pytest on a tree) works without it."""
    import cosmic_ray.plugins

    return tuple(
        name for name in cosmic_ray.plugins.operator_names() if not cosmic_ray.plugins.get_operator(name).arguments()
    )


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the root
    operator: str
    occurrence: int
    # What names the mutant apart from its place in the file: the text of the line it starts on,
    # and which of the operator's mutants on a line of that text it is.
    line: str = ""
    nth: int = 0
    root: Path = ROOT  # the tree it is read from: the run's copy, which edits during a run leave alone

    def source(self) -> str:
        return (self.root / self.path).read_text(encoding="utf-8")

    def mutated(self) -> str | None:
        if self.operator.startswith(generic.PREFIX):
            return generic.mutate(self.source(), self.operator.removeprefix(generic.PREFIX), self.occurrence)
        import cosmic_ray.plugins
        from cosmic_ray.mutating import mutate_code

        operator = cosmic_ray.plugins.get_operator(self.operator)()
        return mutate_code(self.source(), operator, self.occurrence)

    def rank(self, seed: int) -> str:
        """The mutant's place in the sample of ``seed``: a hash of the seed and of what names it, so
        that an edit elsewhere (another file, other lines) leaves the choice among the rest as it was."""
        name = SEPARATOR.join([str(seed), self.path, self.operator, self.line, str(self.nth)])
        return hashlib.sha256(name.encode()).hexdigest()


def modules(root: Path = ROOT) -> list[Path]:
    return sorted(path.relative_to(root) for package in PACKAGES for path in (root / package).rglob("*.py"))


FAMILIES = ("cosmic", "generic")


def population(root: Path = ROOT, families: tuple[str, ...] = FAMILIES) -> list[Mutant]:
    """Every mutant of the tree at ``root`` by the operators of ``families`` (cosmic-ray's, this folder's
    generic ones), in a fixed order: by file, operator and occurrence."""
    out = []
    for path in modules(root):
        source = (root / path).read_text(encoding="utf-8")
        lines = source.splitlines()
        starts: dict[str, list[int]] = {}  # operator -> the line each of its mutants starts on
        if "cosmic" in families:
            import cosmic_ray.plugins
            from cosmic_ray.ast import ast_nodes, get_ast

            nodes = list(ast_nodes(get_ast(source)))
            for name in cosmic_operators():
                operator = cosmic_ray.plugins.get_operator(name)()
                starts[name] = [start[0] for node in nodes for start, _ in operator.mutation_positions(node)]
        if "generic" in families:
            for name in generic.OPERATORS:
                starts[generic.PREFIX + name] = [line for line, *_ in generic.positions(source, name)]
        for name, numbers in starts.items():
            seen: dict[str, int] = {}
            for occurrence, number in enumerate(numbers):
                text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
                seen[text] = seen.get(text, -1) + 1
                out.append(Mutant(path.as_posix(), name, occurrence, text, seen[text], root))
    return out


def _behaviour(source: str) -> str:
    """The syntax tree without annotations: what the module does when annotations are never evaluated."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
    return ast.dump(tree)


def changes_behaviour(original: str, mutated: str) -> bool:
    """False for a mutant that only changes an annotation (under postponed evaluation) or does not compile."""
    try:
        compile(mutated, "<mutant>", "exec")
    except SyntaxError:
        return False
    if "from __future__ import annotations" not in original:
        return ast.dump(ast.parse(original)) != ast.dump(ast.parse(mutated))
    return _behaviour(original) != _behaviour(mutated)


def key(path: str, operator: str, original: str, mutated: str) -> str:
    """A name for a mutant that survives edits elsewhere in its file: the lines it changes."""
    before, after = [], []
    for line in difflib.ndiff(original.splitlines(), mutated.splitlines()):
        if line.startswith("- "):
            before.append(line[2:].strip())
        elif line.startswith("+ "):
            after.append(line[2:].strip())
    return SEPARATOR.join([path, operator, " / ".join(before), " / ".join(after)])


def sample(
    size: int, seed: int, root: Path = ROOT, families: tuple[str, ...] = FAMILIES
) -> Iterator[tuple[Mutant, str, str]]:
    """The first ``size`` mutants in the order of `Mutant.rank` that change behaviour: (mutant, key,
    mutated source)."""
    everything = sorted(population(root, families), key=lambda mutant: mutant.rank(seed))
    taken = 0
    for mutant in everything:
        if taken == size:
            return
        original, mutated = mutant.source(), mutant.mutated()
        if mutated is None or not changes_behaviour(original, mutated):
            continue
        taken += 1
        yield mutant, key(mutant.path, mutant.operator, original, mutated), mutated


def equivalent() -> dict[str, str]:
    """Listed equivalent mutants: key -> why no input tells them apart."""
    out = {}
    for line in EQUIVALENT.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            *fields, why = line.split(SEPARATOR)
            out[SEPARATOR.join(fields)] = why
    return out


def relevant_tests(path: str, tree: Path) -> list[str]:
    """The mutated module (for its doctests) and the test files that name it, most mentions first."""
    module = Path(path)
    stem = module.stem.lstrip("_")
    names = [stem] if stem not in ("init", "main") else []
    names.append(module.parent.name)  # the package, when no test names the module itself
    for name in names:
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        counts = {
            test.relative_to(tree).as_posix(): len(pattern.findall(test.read_text(encoding="utf-8")))
            for test in sorted((tree / "tests").glob("test_*.py"))
        }
        found = sorted((name for name, count in counts.items() if count), key=lambda name: -counts[name])
        if found:
            return [path, *found[:3]]
    return [path]


class Ran(NamedTuple):
    """One pytest run: 'killed' | 'timeout' | 'survived', the end of its output, and the ids of the
    tests that failed ("COLLECT <path>" for a file that did not collect)."""

    outcome: str
    tail: str
    failed: frozenset[str]


def pytest(
    tree: Path,
    arguments: list[str],
    timeout: float,
    cache: Path,
    extra: dict[str, str] | None = None,
    first: bool = True,
) -> Ran:
    """One run in ``tree``, with ``cache`` as the run's derivation cache (tests/conftest.py),
    ``extra`` in its environment (the probes' variables), stopping at the ``first`` failure."""
    failed = Path(tempfile.mkstemp(prefix="failed-", dir=tree.parent)[1])
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree), str(tree.parent / "probe")]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "EPSILON_LAYERNORM_TEST_CACHE": str(cache),
        "EPSILON_LAYERNORM_TEST_DERIVE_FIRST": "1",
        probe.FAILED: str(failed),
        **(extra or {}),
    }
    options = ["-x"] if first else []
    command = [sys.executable, "-m", "pytest", *options, "-q", "-p", "no:cacheprovider", "-p", "_mutation_probe"]
    command += ["--no-header", *arguments]
    process = subprocess.Popen(
        command, cwd=tree, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return Ran("timeout", "", frozenset())
        except BaseException:  # interrupted: the run's own session goes with it
            os.killpg(process.pid, signal.SIGKILL)
            raise
        names = frozenset(failed.read_text(encoding="utf-8").splitlines())
    finally:
        failed.unlink()
    lines = output.decode(errors="replace").strip().splitlines()
    tail = "\n".join([*(line for line in lines if line.startswith(("FAILED ", "ERROR "))), *lines[-1:]])
    if process.returncode == 4:  # a usage error: the runner's (a file not found), or a mutant's (`run_mutant`)
        return Ran("usage", f"pytest {' '.join(arguments)[:200]}: usage error\n{tail}", names)
    # 0: every test passed; 5: none collected (no doctest in the module and no test file);
    # 1: a test failed; 2: a test file did not collect (the mutant breaks an import); 3: pytest crashed.
    return Ran("survived" if process.returncode in (0, 5) else "killed", tail, names)


def changed_lines(original: str, mutated: str) -> tuple[int, int]:
    """The first and last line (1-based) of ``original`` that the mutant changes."""
    lines = original.splitlines()
    matcher = difflib.SequenceMatcher(None, lines, mutated.splitlines(), autojunk=False)
    changed = [(start, end) for tag, start, end, _, _ in matcher.get_opcodes() if tag != "equal"]
    last = min(len(lines), max(changed[-1][1], changed[-1][0] + 1))  # an insertion at the end: the last line
    return min(changed[0][0] + 1, last), last


class Probed(NamedTuple):
    """What the probed run of make test's tier found: for each mutant's name, the tests that run
    the statement it changes (probe.OUTSIDE among them where it runs outside any test); the tests
    that fail on unmutated code (none should, and one that does kills no mutant); each test's
    seconds; and the seconds the whole run took."""

    tests: dict[str, set[str]]
    broken: set[str]
    durations: dict[str, float]
    seconds: float


# A mutant's run may take this many times as long as the same tests took on the unmutated tree,
# plus a start-up (pytest, imports, collection), before it is a timeout: a mutant that loops
# forever costs minutes, not --timeout's ten; a run of a whole tier gets at least TIER_FACTOR
# times the probed run's, so that a slow machine does not time out a survivor.
FACTOR, START_UP, TIER_FACTOR = 5.0, 120.0, 3.0


def limits(probed: Probed | None, tests: set[str] | None, timeout: float) -> dict[str, float]:
    """Each phase's timeout for a mutant whose statement ``tests`` run: --timeout where nothing was
    measured."""
    if probed is None:
        return {}
    took = sum(probed.durations.get(test, 0.0) for test in tests or ())
    tier = max(timeout, TIER_FACTOR * probed.seconds)
    return {"probed": min(timeout, START_UP + FACTOR * took), **dict.fromkeys(TIERS, tier)}


def probe_tests(tree: Path, mutants: list[tuple[Mutant, str, str]], timeout: float, cache: Path) -> Probed:
    """The tests of make test's tier that run each mutant's statement: one run of the tier on the
    tree with a probe in front of each such statement (tests/mutation/probe.py)."""
    sites: dict[str, dict[int, int]] = {}  # path -> line -> probe number
    numbers: dict[str, int] = {}  # mutant -> probe number
    for mutant, name, mutated in mutants:
        original = (tree / mutant.path).read_text(encoding="utf-8")
        line = probe.site(original, *changed_lines(original, mutated))
        if line is not None:
            numbers[name] = sites.setdefault(mutant.path, {}).setdefault(line, len(numbers))
    originals = {path: (tree / path).read_text(encoding="utf-8") for path in sites}
    log = tree.parent / "probe" / "log"
    try:
        for path, lines in sites.items():
            (tree / path).write_text(probe.insert(originals[path], lines), encoding="utf-8")
        options = ["-n", "auto", "--maxprocesses", "8", "-m", TIERS["fast"]]
        began = time.monotonic()
        broken = set(_runners(pytest(tree, options, timeout, cache, {probe.LOG: str(log)}, first=False)).failed)
        seconds = time.monotonic() - began
    finally:
        for path, text in originals.items():
            (tree / path).write_text(text, encoding="utf-8")
    if uncollected := sorted(name for name in broken if name.startswith("COLLECT ")):
        raise SystemExit(f"the unmutated tree does not collect: {', '.join(uncollected)}")
    ran = probe.read(log)
    # An id from a pytest a test runs in another folder names no test of the tree.
    known = {
        name: {test for test in ran.get(number, set()) if _in_tree(test, tree)} for name, number in numbers.items()
    }
    return Probed(known, broken, probe.durations(log), seconds)


def _in_tree(test: str, tree: Path) -> bool:
    return test == probe.OUTSIDE or (tree / test.split("::")[0]).is_file()


def phases(
    mutant: Mutant, tests: set[str] | None, tree: Path, tiers: list[str], broken: set[str]
) -> Iterator[tuple[str, list[str], dict[str, str]]]:
    """The runs that may kill a mutant, cheapest first, as (name, pytest's arguments, environment):
    the tests that run its statement (with its module's doctests), the test files naming its
    module (all their tests, slow ones too), then each tier, less the tests already run; none of
    them the ``broken`` tests, which fail on unmutated code."""
    folder = tree.parent / "probe"
    ran = sorted((tests or set()) - {probe.OUTSIDE} - broken)
    leave = folder / "leave"
    leave.write_text("\n".join(sorted({*ran, *broken})), encoding="utf-8")
    if ran:
        listed = folder / "selected"
        listed.write_text("\n".join(ran), encoding="utf-8")
        files = list(dict.fromkeys(test.split("::")[0] for test in ran))
        many = ["-n", "auto", "--maxprocesses", "8"] if len(ran) > MANY else []  # as make test
        variables = {probe.ONLY: str(listed), probe.MODULE: mutant.path, probe.EXCEPT: str(folder / "broken")}
        (folder / "broken").write_text("\n".join(sorted(broken)), encoding="utf-8")
        yield "probed", [*many, mutant.path, *files], variables
    named = relevant_tests(mutant.path, tree)
    yield "named", named, {probe.EXCEPT: str(leave)}
    done = [f"--deselect={path}" for path in named[1:]]
    for tier in tiers:  # on up to 8 cores, as make test
        yield tier, ["-n", "auto", "--maxprocesses", "8", "-m", TIERS[tier], *done], {probe.EXCEPT: str(leave)}


def confirmed(tree: Path, failed: frozenset[str], timeout: float, cache: Path) -> frozenset[str]:
    """Of the tests that failed on a mutant, those that fail on the unmutated tree too, run alone:
    a failure that says nothing about the mutant (a test that needs others to run first)."""
    tests = sorted(name for name in failed if not name.startswith("COLLECT "))
    if not tests:
        return frozenset()
    listed = tree.parent / "probe" / "confirm"
    listed.write_text("\n".join(tests), encoding="utf-8")
    files = list(dict.fromkeys(test.split("::")[0] for test in tests))
    return _runners(pytest(tree, files, timeout, cache, {probe.ONLY: str(listed)}, first=False)).failed


def _runners(ran: Ran) -> Ran:
    """A run on the unmutated tree: a usage error there is the runner's, and ends the run."""
    if ran.outcome == "usage":
        raise SystemExit(ran.tail)
    return ran


def copy_tree(into: Path) -> None:
    """The files git knows and the untracked ones it does not ignore: the project as a fresh clone sees it."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)


TIERS = {"fast": "not slow", "slow": "slow"}
MANY = 300  # tests a probed statement's run takes on every core: fewer start faster on one


def warm_cache(tree: Path, into: Path, timeout: float) -> Path:
    """A derivation cache holding every layer's derivation from the unmutated ``tree``: the folder of
    its key, to be linked into each mutant's own cache folder."""
    environment = {**os.environ, "PYTHONPATH": str(tree), "XDG_CACHE_HOME": str(into), "MPLBACKEND": "Agg"}
    environment.pop("EPSILON_LAYERNORM_NO_CACHE", None)
    script = "from derivations import cache, catalog; catalog.rows(list(catalog.LAYERS)); print(cache.key())"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tree, env=environment, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise SystemExit(f"the unmutated tree does not derive: {done.stderr.strip().splitlines()[-1:]}")
    return into / "epsilon-layernorm" / done.stdout.split()[-1]


def mutant_cache(warm: Path, into: Path) -> Path:
    """A fresh cache folder for one mutant, in which the unmutated key's folder is ``warm``."""
    folder = into / "epsilon-layernorm"
    folder.mkdir(parents=True, mode=0o700)
    (folder / warm.name).symlink_to(warm, target_is_directory=True)
    return into


def run_mutant(
    mutant: Mutant,
    mutated: str,
    tests: set[str] | None,
    tree: Path,
    arguments: argparse.Namespace,
    cache: Path,
    broken: set[str],
    timeouts: dict[str, float] | None = None,
) -> tuple[str, str, str]:
    """(outcome, the end of pytest's output, the phase that decided) for one mutant, written into
    ``tree`` for its runs only, each phase within its entry of ``timeouts`` (`limits`; else
    --timeout).  A kill stands only where the failed tests pass on unmutated code, run alone;
    those that do not join ``broken``, and the mutant runs again without them."""
    target = tree / mutant.path
    original = target.read_text(encoding="utf-8")
    while True:
        phase, ran = "", Ran("survived", "", frozenset())
        target.write_text(mutated, encoding="utf-8")
        try:
            for step, options, extra in phases(mutant, tests, tree, arguments.tiers, broken):
                phase = step
                ran = pytest(tree, options, (timeouts or {}).get(step, arguments.timeout), cache, extra)
                if ran.outcome != "survived":
                    break
        finally:
            target.write_text(original, encoding="utf-8")
        if ran.outcome == "usage":
            # pytest would not start (a conftest whose imports the mutant breaks ends it with a
            # usage error): the mutant's doing where the unmutated tree collects the same run.
            _runners(pytest(tree, [*options, "--collect-only"], arguments.timeout, cache, extra))
            return "killed", ran.tail, phase
        unreliable = confirmed(tree, ran.failed, arguments.timeout, cache) if ran.outcome == "killed" else frozenset()
        if not unreliable:
            return ran.outcome, ran.tail, phase
        for test in sorted(unreliable):
            print(f"warning: {test} fails on the unmutated tree run alone; it is not run for the mutants", flush=True)
        broken |= unreliable


# A mutant's line of a run's output: its number, outcome, seconds, phase and name.
LINE = re.compile(r"\[ *\d+\] (\w+) +[\d.]+ s (.{7}) (.+)")


def decided(output: str) -> dict[str, str]:
    """The mutants an earlier run's output says were killed or timed out, by name: the outcomes
    a run that is resumed (``--resume``) keeps, so that a sample can be run over several
    sittings.  A survivor is run again (a test may kill it now), and so is every mutant the
    earlier run did not reach."""
    found = (LINE.fullmatch(line) for line in output.splitlines())
    return {match[3]: match[1] for match in found if match is not None and match[1] in ("killed", "timeout")}


def run(arguments: argparse.Namespace) -> int:
    listed = equivalent()
    rerun = None
    if arguments.rerun is not None:  # the survivors a previous run printed
        lines = arguments.rerun.read_text(encoding="utf-8").splitlines()
        rerun = {line.removeprefix("survived: ") for line in lines if line.startswith("survived: ")}
    earlier = decided(arguments.resume.read_text(encoding="utf-8")) if arguments.resume is not None else {}
    results: dict[str, list[str]] = {"killed": [], "timeout": [], "survived": [], "equivalent": []}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutation-") as folder:
        tree = Path(folder) / "tree"
        copy_tree(tree)
        warm = warm_cache(tree, Path(folder) / "warm", arguments.timeout)
        (Path(folder) / "probe").mkdir()
        shutil.copy2(Path(__file__).with_name("probe.py"), Path(folder) / "probe" / "_mutation_probe.py")
        drawn = [
            (mutant, name, mutated)
            for mutant, name, mutated in sample(arguments.sample, arguments.seed, tree, arguments.operators)
            if (rerun is None or name in rerun) and name not in listed and name not in earlier
        ]
        tests: dict[str, set[str]] = {}
        broken: set[str] = set()
        probed = None
        if arguments.probe:
            began = time.monotonic()
            cache = mutant_cache(warm, Path(tempfile.mkdtemp(prefix="cache-", dir=folder)))
            probed = probe_tests(tree, drawn, arguments.timeout, cache)
            tests, broken = probed.tests, probed.broken
            shutil.rmtree(cache, ignore_errors=True)
            found = sum(bool(ran - {probe.OUTSIDE}) for ran in tests.values())
            seconds = time.monotonic() - began
            print(f"[  0] probes     {seconds:6.1f} s {found} of {len(drawn)} run by a test", flush=True)
            for test in sorted(broken):  # left out below: a failure there says nothing of a mutant
                print(f"warning: {test} fails on the unmutated tree; it is not run for the mutants", flush=True)
        for number, (mutant, name, mutated) in enumerate(
            sample(arguments.sample, arguments.seed, tree, arguments.operators), 1
        ):
            began = time.monotonic()
            if rerun is not None and name not in rerun:
                continue
            phase = ""
            if name in listed:
                outcome, where = "equivalent", listed[name]
            elif name in earlier:
                outcome, where, phase = earlier[name], "", "earlier"
            else:
                cache = mutant_cache(warm, Path(tempfile.mkdtemp(prefix="cache-", dir=folder)))
                try:
                    timeouts = limits(probed, tests.get(name), arguments.timeout)
                    outcome, where, phase = run_mutant(
                        mutant, mutated, tests.get(name), tree, arguments, cache, broken, timeouts
                    )
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
            results[outcome].append(name)
            print(f"[{number:3d}] {outcome:10s} {time.monotonic() - began:6.1f} s {phase:7s} {name}", flush=True)
            if arguments.verbose and (outcome == "survived" or phase in TIERS):  # the tests to have run first
                print(textwrap.indent(where, "      "), flush=True)
    killed = len(results["killed"]) + len(results["timeout"])
    total = killed + len(results["survived"])
    score = 100.0 * killed / total if total else 100.0
    minutes = (time.monotonic() - started) / 60
    print(
        f"\nmutation score: {score:.1f}% ({killed} of {total} killed, {len(results['timeout'])} by timeout; "
        f"{len(results['equivalent'])} listed equivalent) in {minutes:.1f} min; seed {arguments.seed}"
    )
    for name in results["survived"]:
        print(f"survived: {name}")
    return 1 if results["survived"] and (arguments.strict or score < arguments.fail_under) else 0


def seed(text: str) -> int:
    """An integer seed, or for 'commit' the first 48 bits of git's HEAD: a fresh sample on every commit."""
    if text != "commit":
        return int(text)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True)
    return int(head.stdout.strip()[:12], 16)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/mutation/run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=100, help="how many mutants to run (default 100)")
    parser.add_argument(
        "--seed",
        type=seed,
        default=15,
        help="the seed of the shuffle (default 15), or 'commit': one drawn from the commit checked out (git's HEAD)",
    )
    parser.add_argument(
        "--operators",
        type=lambda text: tuple(family for family in FAMILIES if family in text.split(",")),
        default=FAMILIES,
        help="whose mutants to draw from: cosmic (cosmic-ray's), generic (generic.py's); default cosmic,generic",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600,
        help="seconds per pytest run; longer is a kill (after the probes: less for the tests "
        "that run the statement, more for a tier, from their measured times)",
    )
    parser.add_argument("--fail-under", type=float, default=85, help="the least score in percent (default 85)")
    parser.add_argument("--strict", action="store_true", help="fail on any survivor not listed as equivalent")
    parser.add_argument(
        "--tiers",
        type=lambda text: [tier for tier in text.split(",") if tier],
        default=["fast", "slow"],
        help="the tiers a mutant the first tests miss runs, in order: fast (make test), slow (make test-slow); "
        "default fast,slow",
    )
    parser.add_argument(
        "--no-probe",
        dest="probe",
        action="store_false",
        help="do not first find the tests that run each mutant's statement (one run of make test's tier)",
    )
    parser.add_argument("--rerun", type=Path, help="run only the survivors listed in this earlier output")
    parser.add_argument(
        "--resume",
        type=Path,
        help="keep the kills and timeouts this earlier output of the same sample reports, and run the rest",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print the end of pytest's output for survivors, and for mutants the first tests miss",
    )
    parser.add_argument("--list", action="store_true", help="print the sample's mutants, run none")
    arguments = parser.parse_args(argv)
    if not arguments.operators:
        parser.error(f"--operators: name one or more of {', '.join(FAMILIES)}")
    if arguments.list:
        for number, (_, name, _) in enumerate(sample(arguments.sample, arguments.seed, ROOT, arguments.operators), 1):
            print(f"[{number:3d}] {name}")
        return 0
    # SIGTERM ends the run as Ctrl-C does: the pytest running and the copied tree are removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    return run(arguments)


if __name__ == "__main__":
    sys.exit(main())
