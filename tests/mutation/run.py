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
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cosmic_ray.plugins
from cosmic_ray.ast import ast_nodes, get_ast
from cosmic_ray.mutating import mutate_code

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generic

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("derivations", "numeric", "figures")
EQUIVALENT = Path(__file__).with_name("equivalent.txt")
SEPARATOR = " :: "
# The operators that take arguments (VariableReplacer, VariableInserter) need
# names chosen per module; every other cosmic-ray operator is used.
OPERATORS = tuple(
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
            nodes = list(ast_nodes(get_ast(source)))
            for name in OPERATORS:
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


def pytest(tree: Path, arguments: list[str], timeout: float, cache: Path) -> tuple[str, str]:
    """('killed' | 'timeout' | 'survived', the last lines of pytest's output) for one run in ``tree``,
    with ``cache`` as the run's derivation cache (tests/conftest.py)."""
    environment = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "EPSILON_LAYERNORM_TEST_CACHE": str(cache),
        "EPSILON_LAYERNORM_TEST_DERIVE_FIRST": "1",
    }
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *arguments]
    process = subprocess.Popen(
        command, cwd=tree, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return "timeout", ""
    except BaseException:  # interrupted: the run's own session goes with it
        os.killpg(process.pid, signal.SIGKILL)
        raise
    tail = "\n".join(output.decode(errors="replace").strip().splitlines()[-3:])
    # 0: every test passed; 5: none collected (no doctest in the module and no test file).
    return ("survived" if process.returncode in (0, 5) else "killed"), tail


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


def run(arguments: argparse.Namespace) -> int:
    listed = equivalent()
    rerun = None
    if arguments.rerun is not None:  # the survivors a previous run printed
        lines = arguments.rerun.read_text(encoding="utf-8").splitlines()
        rerun = {line.removeprefix("survived: ") for line in lines if line.startswith("survived: ")}
    results: dict[str, list[str]] = {"killed": [], "timeout": [], "survived": [], "equivalent": []}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutation-") as folder:
        tree = Path(folder) / "tree"
        copy_tree(tree)
        warm = warm_cache(tree, Path(folder) / "warm", arguments.timeout)
        for number, (mutant, name, mutated) in enumerate(
            sample(arguments.sample, arguments.seed, tree, arguments.operators), 1
        ):
            began = time.monotonic()
            if rerun is not None and name not in rerun:
                continue
            if name in listed:
                outcome, where = "equivalent", listed[name]
            else:
                target = tree / mutant.path
                original = target.read_text(encoding="utf-8")
                target.write_text(mutated, encoding="utf-8")
                cache = mutant_cache(warm, Path(tempfile.mkdtemp(prefix="cache-", dir=folder)))
                try:
                    first = relevant_tests(mutant.path, tree)
                    outcome, where = pytest(tree, first, arguments.timeout, cache)
                    rest = [f"--deselect={path}" for path in first[1:]]
                    for tier in arguments.tiers:  # on up to 8 cores, as make test
                        if outcome != "survived":
                            break
                        options = ["-n", "auto", "--maxprocesses", "8", "-m", TIERS[tier], *rest]
                        outcome, where = pytest(tree, options, arguments.timeout, cache)
                finally:
                    target.write_text(original, encoding="utf-8")
                    shutil.rmtree(cache, ignore_errors=True)
            results[outcome].append(name)
            print(f"[{number:3d}] {outcome:10s} {time.monotonic() - began:6.1f} s  {name}", flush=True)
            if outcome == "survived" and arguments.verbose:
                print(f"      {where}", flush=True)
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
    parser.add_argument("--timeout", type=float, default=600, help="seconds per pytest run; longer is a kill")
    parser.add_argument("--fail-under", type=float, default=85, help="the least score in percent (default 85)")
    parser.add_argument("--strict", action="store_true", help="fail on any survivor not listed as equivalent")
    parser.add_argument(
        "--tiers",
        type=lambda text: [tier for tier in text.split(",") if tier],
        default=["fast", "slow"],
        help="the tiers a mutant the first tests miss runs, in order: fast (make test), slow (make test-slow); "
        "default fast,slow",
    )
    parser.add_argument("--rerun", type=Path, help="run only the survivors listed in this earlier output")
    parser.add_argument("--verbose", action="store_true", help="print the end of pytest's output for survivors")
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
