"""The mutation run's probes (tests/mutation/probe.py): each goes where it compiles and runs when the
statement it stands for does, logs the test running it, and the plugin keeps exactly the tests listed."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "mutation"))
import probe

SOURCE = textwrap.dedent('''\
    """A module."""
    LIMIT = 3; OTHER = 4


    @staticmethod
    def f(x):
        if x < 0:
            return -x
        elif x > LIMIT:
            return (x
                    + 1)
        if x: x = 2 * x
        return x
    ''')


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        (2, 2, 2),  # a module-level statement (the first of two on its line)
        (5, 5, 5),  # a decorator: in front of it
        (6, 6, 5),  # the decorated definition's line: in front of its decorator
        (3, 6, 5),  # the blank lines above it too (cosmic-ray's RemoveDecorator changes them)
        (7, 7, 7),  # the if's test: in front of the if
        (8, 8, 8),  # a return in the if
        (9, 9, 7),  # the elif's test: not in front of "elif" (no statement can be), the if's
        (10, 11, 10),  # a statement over two lines
        (11, 11, 10),  # its second line
        (12, 12, 12),  # "if x: x = 2 * x": in front of the if, not inside its line
    ],
)
def test_a_probe_goes_in_front_of_the_innermost_statement_where_it_compiles(first, last, expected):
    line = probe.site(SOURCE, first, last)
    assert line == expected
    compile(probe.insert(SOURCE, {line: 0}), "<probed>", "exec")


def test_probes_run_when_their_statements_do_and_log_the_test_running_them(tmp_path, monkeypatch):
    probed = probe.insert(SOURCE, {8: 0, 10: 1, 13: 2})
    assert probed.count("_mutation_probe") == 3
    log = tmp_path / "log"
    monkeypatch.setenv(probe.LOG, str(log))
    monkeypatch.setitem(sys.modules, "_mutation_probe", probe)
    monkeypatch.setattr(probe, "_seen", set())
    namespace: dict = {}
    exec(compile(probed, "<probed>", "exec"), namespace)
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/test_a.py::test_b[1] (call)")
    assert [namespace["f"](x) for x in (-2, 5, 1)] == [2, 6, 2]  # the module does what it did
    namespace["f"](-3)  # once a test a process
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/test_a.py::test_c (call)")
    namespace["f"](-1)
    assert probe.read(log) == {
        0: {"tests/test_a.py::test_b[1]", "tests/test_a.py::test_c"},
        1: {"tests/test_a.py::test_b[1]"},
        2: {"tests/test_a.py::test_b[1]"},
    }
    assert log.read_text(encoding="utf-8").count("\n") == 4


def test_a_probe_outside_the_probes_path_does_nothing():
    code = probe.insert("x = 1\n", {1: 0}) + "print(x)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "1\n"


def _pytest(folder: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``folder`` with the probes' plugin (copied there), its variables set to ``variables``."""
    (folder / "_mutation_probe.py").write_text(Path(probe.__file__).read_text(encoding="utf-8"), encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-p", "_mutation_probe", "-p", "no:cacheprovider", "-q", *arguments]
    environment = {"PATH": "", "PYTHONPATH": str(folder), **variables}
    return subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True, check=False)


def test_the_plugin_keeps_exactly_the_listed_tests_and_the_modules_doctests(tmp_path):
    (tmp_path / "test_one.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('k', [1, 2, 3])\ndef test_a(k):\n    pass\n\n"
        "def test_b():\n    pass\n",
        encoding="utf-8",
    )
    (tmp_path / "module.py").write_text('def g():\n    """\n    >>> 1 + 1\n    2\n    """\n', encoding="utf-8")
    listed = tmp_path / "listed"
    listed.write_text("test_one.py::test_a[2]\ntest_one.py::test_b\n", encoding="utf-8")

    def collected(**variables: str) -> list[str]:
        done = _pytest(tmp_path, "--doctest-modules", "--co", **variables)
        return sorted(line for line in done.stdout.splitlines() if "::" in line)

    everything = ["module.py::module.g", "test_one.py::test_a[1]", "test_one.py::test_a[2]", "test_one.py::test_a[3]"]
    everything.append("test_one.py::test_b")
    assert collected() == everything
    only = collected(**{probe.ONLY: str(listed), probe.MODULE: "module.py"})
    assert only == ["module.py::module.g", "test_one.py::test_a[2]", "test_one.py::test_b"]
    assert collected(**{probe.ONLY: str(listed)}) == ["test_one.py::test_a[2]", "test_one.py::test_b"]
    leave = collected(**{probe.EXCEPT: str(listed)})
    assert leave == ["module.py::module.g", "test_one.py::test_a[1]", "test_one.py::test_a[3]"]


def test_a_probe_a_shared_fixture_runs_counts_for_every_test_using_the_fixture(tmp_path):
    """A fixture set up once for many tests runs its code under the first of them only; a mutant
    of that code can fail any of them."""
    (tmp_path / "probed.py").write_text(probe.insert("def g():\n    return 1\n", {2: 0}), encoding="utf-8")
    (tmp_path / "test_shared.py").write_text(
        "import pytest\nimport probed\n\n"
        "@pytest.fixture(scope='module')\ndef value():\n    return probed.g()\n\n"
        "def test_first(value):\n    assert value == 1\n\n"
        "def test_second(value):\n    assert value == 1\n\n"
        "def test_apart():\n    pass\n\n"
        "def test_direct():\n    assert probed.g() == 1\n",
        encoding="utf-8",
    )
    log = tmp_path / "log"
    done = _pytest(tmp_path, "test_shared.py", **{probe.LOG: str(log)})
    assert done.returncode == 0, done.stdout
    tests = {"test_shared.py::test_first", "test_shared.py::test_second", "test_shared.py::test_direct"}
    assert probe.read(log) == {0: tests}


def test_the_plugin_writes_each_failed_test_by_its_whole_id_and_each_file_that_does_not_collect(tmp_path):
    (tmp_path / "test_ids.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('k', ['one file', 'two  spaces', 'ok'])\n"
        "def test_a(k):\n    assert k == 'ok'\n",
        encoding="utf-8",
    )
    (tmp_path / "test_broken.py").write_text("import not_a_module\n", encoding="utf-8")
    failed = tmp_path / "failed"
    done = _pytest(tmp_path, **{probe.FAILED: str(failed)})
    assert done.returncode == 2, done.stdout  # interrupted: a file did not collect
    assert set(failed.read_text(encoding="utf-8").splitlines()) == {"COLLECT test_broken.py"}
    done = _pytest(tmp_path, "test_ids.py", **{probe.FAILED: str(failed)})
    assert done.returncode == 1, done.stdout
    assert set(failed.read_text(encoding="utf-8").splitlines()) == {
        "COLLECT test_broken.py",
        "test_ids.py::test_a[one file]",
        "test_ids.py::test_a[two  spaces]",
    }


def _tree_whose_conftest_imports(tmp_path: Path) -> Path:
    """A project whose tests' conftest imports its package: a mutant breaking the package's import
    stops pytest before any test, with a usage error (status 4)."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "pkg" / "__init__.py").write_text("VALUE = 1\n", encoding="utf-8")
    (tree / "tests" / "conftest.py").write_text("import pkg\n", encoding="utf-8")
    (tree / "tests" / "test_a.py").write_text("import pkg\n\ndef test_a():\n    assert pkg.VALUE\n", encoding="utf-8")
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "_mutation_probe.py").write_text(Path(probe.__file__).read_text(encoding="utf-8"))
    return tree


def test_a_mutant_that_stops_pytest_from_starting_is_killed_and_a_runners_usage_error_ends_the_run(tmp_path):
    import argparse

    import run as mutation

    tree = _tree_whose_conftest_imports(tmp_path)
    mutant = mutation.Mutant("pkg/__init__.py", "generic/numbers", 0, "VALUE = 1", 0, tree)
    arguments = argparse.Namespace(tiers=[], timeout=120.0)
    outcome, tail, phase = mutation.run_mutant(mutant, "VALUE = 1 +\n", None, tree, arguments, tmp_path, set())
    assert (outcome, phase) == ("killed", "named")
    assert "usage error" in tail
    assert (tree / "pkg" / "__init__.py").read_text(encoding="utf-8") == "VALUE = 1\n"  # restored
    # A usage error the unmutated tree gives too (its conftest imports a module that is not there)
    # is the runner's: the run ends, naming it.
    (tree / "tests" / "conftest.py").write_text("import pkg\nimport nowhere\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="usage error"):
        mutation.run_mutant(mutant, "VALUE = 2\n", None, tree, arguments, tmp_path, set())


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_probed_run_logs_each_test_s_seconds_once(tmp_path, workers):
    """Set-up, call and tear-down summed, by the test's id; under pytest-xdist once (the controller's
    report), not again by the worker."""
    (tmp_path / "test_timed.py").write_text(
        "import time\n\ndef test_slow():\n    time.sleep(0.4)\n\ndef test_quick():\n    pass\n", encoding="utf-8"
    )
    log = tmp_path / "log"
    done = _pytest(tmp_path, *workers, "test_timed.py", **{probe.LOG: str(log)})
    assert done.returncode == 0, done.stdout
    found = probe.durations(log)
    assert set(found) == {"test_timed.py::test_slow", "test_timed.py::test_quick"}
    assert 0.4 <= found["test_timed.py::test_slow"] < 0.7
    assert found["test_timed.py::test_quick"] < 0.2
    assert probe.read(log) == {}  # no probe ran: the timings are no probe's tests


def test_a_mutant_s_timeouts_follow_the_times_its_tests_took():
    """The tests that run the statement get five times their own seconds and a start-up, at most
    --timeout; a whole tier at least three times the probed run of it; nothing measured, --timeout."""
    import run as mutation

    probed = mutation.Probed({}, set(), {"a": 2.0, "b": 1.0, "c": 1000.0}, 100.0)
    assert mutation.limits(probed, {"a", "b"}, 600.0) == {"probed": 135.0, "fast": 600.0, "slow": 600.0}
    assert mutation.limits(probed, {"a", "c"}, 600.0)["probed"] == 600.0
    assert mutation.limits(probed, None, 600.0)["probed"] == 120.0
    assert mutation.limits(probed._replace(seconds=300.0), {"a"}, 600.0)["fast"] == 900.0
    assert mutation.limits(None, {"a"}, 600.0) == {}


def test_a_mutant_that_hangs_is_a_timeout_within_its_phase_s_own_limit(tmp_path):
    import argparse
    import time

    import run as mutation

    tree = _tree_whose_conftest_imports(tmp_path)
    mutant = mutation.Mutant("pkg/__init__.py", "generic/numbers", 0, "VALUE = 1", 0, tree)
    arguments = argparse.Namespace(tiers=[], timeout=600.0)
    began = time.monotonic()
    hangs = "import time\n\nwhile True:\n    time.sleep(1)\nVALUE = 1\n"
    outcome, _, phase = mutation.run_mutant(mutant, hangs, None, tree, arguments, tmp_path, set(), {"named": 3.0})
    assert (outcome, phase) == ("timeout", "named")
    assert time.monotonic() - began < 60
    assert (tree / "pkg" / "__init__.py").read_text(encoding="utf-8") == "VALUE = 1\n"


def test_a_resumed_run_keeps_the_kills_and_timeouts_of_the_earlier_output_and_runs_the_rest():
    """`--resume`: the lines a run prints for each mutant are read back; a kill or a timeout is
    kept, a survivor (a test may kill it now) and the probes' line are not."""
    import run as mutation

    name = "pkg/m.py :: generic/numbers :: a = 1 :: a = (2)"
    lines = [
        (1, "killed", 9.3, "probed", name),
        (2, "timeout", 600.0, "fast", name.replace("a = 1", "b = 1")),
        (3, "survived", 400.2, "fast", name.replace("a = 1", "c = 1")),
        (4, "killed", 0.0, "earlier", name.replace("a = 1", "d = 1")),
        (5, "killed", 1.0, "", name.replace("a = 1", "e = 1")),
    ]
    output = "\n".join(
        f"[{k:3d}] {what:10s} {seconds:6.1f} s {phase:7s} {mutant}" for k, what, seconds, phase, mutant in lines
    )
    output = f"[  0] probes      602.4 s 95 of 100 run by a test\n{output}\n\nsurvived: {lines[2][4]}\n"
    assert mutation.decided(output) == {
        name: "killed",
        lines[1][4]: "timeout",
        lines[3][4]: "killed",
        lines[4][4]: "killed",
    }
