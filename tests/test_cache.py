"""The derivation cache: a warm run prints what a cold one does, and a bad or foreign entry is never used."""

import dataclasses
import hashlib
import itertools
import json
import os
import pickle
import re
import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sympy as sp

from derivations import LAYERS, formulas
from derivations import cache as derivation_cache
from derivations.__main__ import main
from derivations.derive import eigen, jacobian, spectral

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = (ROOT / "tests" / "golden" / "derive.txt").read_text()


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """An empty cache of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(derivation_cache.ENVIRONMENT, raising=False)
    monkeypatch.setattr(derivation_cache, "_said", set())  # each test's warnings are its own
    monkeypatch.setattr(derivation_cache, "_disabled", False)  # on, whatever --no-cache ran before
    return tmp_path / "xdg" / derivation_cache.PROJECT


def _entries(root: Path) -> list[Path]:
    """The entries under ``root``: every file but the folders' authentication keys."""
    files = root.rglob("*") if root.exists() else []
    return [path for path in files if path.is_file() and path.name != getattr(derivation_cache, "SECRET", None)]


def _python(code_or_module: list[str], home: Path, **environment: str) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if name != derivation_cache.ENVIRONMENT}
    env.update(XDG_CACHE_HOME=str(home), **environment)
    return subprocess.run(
        [sys.executable, *code_or_module], capture_output=True, text=True, cwd=ROOT, env=env, check=False
    )


# A warm run that imported SymPy would not be the fast path this test is about.
_WARM = (
    "import sys; from derivations.__main__ import main; status = main(sys.argv[1:]); "
    "assert 'sympy' not in sys.modules, 'the warm run imported sympy'; raise SystemExit(status)"
)


def test_cold_and_warm_derive_print_the_same_bytes_and_the_warm_one_imports_no_sympy(tmp_path):
    argv = ["--layer", "rmsnorm", "--format", "text"]
    cold = _python(["-m", "derivations", *argv], tmp_path)
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout in GOLDEN
    assert _entries(tmp_path / derivation_cache.PROJECT), "the cold run stored nothing"
    warm = _python(["-c", _WARM, *argv], tmp_path)
    assert (warm.returncode, warm.stderr) == (0, "")
    assert warm.stdout == cold.stdout


_WARM_CHECK = _WARM.replace("main(sys.argv[1:])", "main(['check', *sys.argv[1:]])")


@pytest.mark.parametrize(
    ("claim", "status", "verdict"),
    [("J @ c == eigen_centered * c", 0, "proved"), ("slope_at_zero == 1/sqrt(epsilon)", 1, "refuted")],
)
def test_cold_and_warm_claims_give_the_same_verdict_and_status_and_the_warm_one_imports_no_sympy(
    tmp_path, claim, status, verdict
):
    argv = [claim, "--layer", "layernorm_std_eps"]
    cold = _python(["-m", "derivations", "check", *argv], tmp_path)
    assert cold.returncode == status, cold.stderr
    assert verdict in cold.stdout
    warm = _python(["-c", _WARM_CHECK, *argv], tmp_path)
    assert (warm.returncode, warm.stderr) == (status, "")
    assert warm.stdout == cold.stdout


def test_an_undecided_check_is_not_stored(cache_home, capsys):
    from derivations.__main__ import main as command

    assert command(["check", "slope_at_zero == "]) == 2  # an error verdict: checked again every time
    assert "error" in capsys.readouterr().out
    assert not _entries(cache_home)
    assert command(["check", "slope_at_zero == 1/sqrt(epsilon)", "--format", "json"]) == 0
    assert len(_entries(cache_home)) >= 1


def test_a_stored_verdict_is_keyed_by_the_numeric_code_that_confirms_it(monkeypatch):
    from derivations import __main__ as command

    before = command._confirming_code()
    real = derivation_cache.tree
    monkeypatch.setattr(derivation_cache, "tree", lambda root, pattern="*": real(root, pattern) + b"changed")
    assert command._confirming_code() != before


def test_no_cache_environment_reads_and_writes_nothing(tmp_path):
    done = _python(["-m", "derivations", "--layer", "rmsnorm"], tmp_path, **{derivation_cache.ENVIRONMENT: "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout in GOLDEN
    assert not _entries(tmp_path / derivation_cache.PROJECT)


@pytest.mark.parametrize(
    ("value", "on"),
    [
        *[("", True), ("0", True), (" false ", True), ("No", True), ("off", True)],
        *[("1", False), ("yes", False), ("TRUE", False), ("on", False)],
    ],
)
def test_the_environment_variable_turns_the_cache_off(value, on, monkeypatch, capsys):
    monkeypatch.setattr(derivation_cache, "_said", set())
    monkeypatch.setenv(derivation_cache.ENVIRONMENT, value)
    assert derivation_cache.enabled() is on
    assert capsys.readouterr().err == ""


def test_a_value_not_understood_turns_the_cache_off_and_says_so_once(monkeypatch, capsys):
    monkeypatch.setattr(derivation_cache, "_said", set())
    monkeypatch.setenv(derivation_cache.ENVIRONMENT, "sometimes")
    assert (derivation_cache.enabled(), derivation_cache.enabled()) == (False, False)
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{derivation_cache.ENVIRONMENT}='sometimes' is not understood" in err


def test_no_cache_option_writes_nothing(cache_home, capsys):
    assert main(["--no-cache", "--layer", "rmsnorm"]) == 0
    assert capsys.readouterr().out in GOLDEN
    assert not _entries(cache_home)


def test_every_deriving_command_takes_no_cache(cache_home, capsys):
    """codegen and the report take --no-cache, as derive, check and figures do; codegen then writes nothing."""
    assert main(["codegen", "--layer", "rmsnorm", "--target", "numpy", "--no-cache"]) == 0
    assert "def " in capsys.readouterr().out
    assert not _entries(cache_home)
    from figures import report  # imported after: importing the figures derives what they draw

    with pytest.raises(SystemExit) as stop:
        report.main(["--no-cache", "--help"])
    assert stop.value.code == 0
    assert "--no-cache" in capsys.readouterr().out


def test_a_stored_output_is_what_derive_prints(cache_home, capsys):
    assert main(["--layer", "rmsnorm"]) == 0
    first = capsys.readouterr().out
    assert main(["--layer", "rmsnorm"]) == 0
    assert capsys.readouterr().out == first
    assert derivation_cache.read(_entry(["--layer", "rmsnorm"])) == first.encode()


def _entry(argv):
    from derivations.__main__ import _output_entry

    return _output_entry(argv)


@pytest.mark.parametrize(
    ("argv", "cached"),
    [
        ([], True),
        (["--format", "latex", "--layer=rmsnorm", "--standalone", "--notation", "n=N"], True),
        (["--no-cache"], False),
        (["--definition", "layer.toml"], False),  # a file's bytes are not in the arguments
        (["--standalone=yes"], False),
        (["--form", "latex"], False),  # an abbreviation goes the whole way, and argparse decides
        (["-h"], False),
    ],
)
def test_only_arguments_the_output_depends_on_alone_are_looked_up(argv, cached):
    assert (_entry(argv) is not None) is cached


@pytest.mark.parametrize(
    ("argv", "cached"),
    [
        (["slope_at_zero == 1/sqrt(epsilon)"], True),
        (["x", "--layer", "rmsnorm", "--assume", "n >= 3", "--assume=epsilon < 1", "--timeout", "5"], True),
        (["--latex", r"\|J\|_2 \le 1", "--format", "json"], True),
        (["--claims", "claims.toml"], False),  # a file's bytes are not in the arguments
        (["x", "--definition", "layer.toml"], False),
        (["x", "--no-cache"], False),
        (["x", "y"], False),  # two claims: argparse refuses it
        (["x", "-h"], False),
    ],
)
def test_only_inline_claims_are_looked_up(argv, cached):
    from derivations.__main__ import _CACHED_CHECK_OPTIONS, _output_entry

    found = _output_entry(argv, " check", _CACHED_CHECK_OPTIONS)
    assert (found is not None) is cached
    assert found is None or found != _entry(argv)  # never a derive run's entry


# One valid value of each option a stored output may be looked up under, per command.
_VALUES = {
    "": {"--format": "latex", "--layer": "rmsnorm", "--notation": "n=N", "--formula": "*.slope*", "--standalone": None},
    " check": {"--latex": "x", "--layer": "rmsnorm", "--assume": "n >= 3", "--format": "json", "--timeout": "5"},
}


def _parsers():
    from derivations.__main__ import _CACHED_CHECK_OPTIONS, _CACHED_OPTIONS, _parser

    parser, commands = _parser()
    return {"": (parser, _CACHED_OPTIONS), " check": (commands["check"].filled(), _CACHED_CHECK_OPTIONS)}


@pytest.mark.parametrize("command", ["", " check"])
def test_the_stored_outputs_parse_every_option_as_the_command_line_does(command):
    """The look-up's own reading of the arguments (how many values each option takes) is argparse's,
    option by option and for every ordered pair, in both spellings (``--option value``,
    ``--option=value``): each such run is looked up, and argparse leaves nothing over; with an
    option outside the table, or one value too many, nothing is looked up."""
    from derivations.__main__ import _output_entry

    parser, table = _parsers()[command]
    values = _VALUES[command]
    assert set(table) == set(values)
    actions = {option: action for action in parser._actions for option in action.option_strings}
    for option in table:  # the table's counts are the parser's
        assert table[option] == (0 if actions[option].nargs == 0 else 1), option
    claim = ["slope_at_zero == 1"] if command else []

    def spelt(option, joined):
        value = values[option]
        return [option] if value is None else [f"{option}={value}"] if joined else [option, value]

    for first, second in itertools.product(table, repeat=2):
        for joined in (False, True):
            argv = [*spelt(first, joined), *spelt(second, not joined), *claim]
            assert _output_entry(argv, command, table) is not None, argv
            _, left = parser.parse_known_args(argv)
            assert left == [], argv
            extra = [*argv, "extra"] if not command else [*argv, "another claim"]
            assert _output_entry(extra, command, table) is None, extra
    for option in set(actions) - set(table) - {"-h", "--help", "--version", "--no-cache"}:
        assert _output_entry([option, "value", *claim], command, table) is None, option


def test_a_failed_run_is_not_stored(cache_home, capsys):
    with pytest.raises(SystemExit):
        main(["--layer", "nope"])
    capsys.readouterr()
    assert not _entries(cache_home)


# --- entries that must not be trusted ----------------------------------------


def _damaged(data: bytes) -> list[bytes]:
    head = len(derivation_cache.MAGIC)
    return [
        data[:-1],  # truncated payload
        data[: head + 5],  # truncated checksum
        b"",  # empty
        data[:-1] + bytes([data[-1] ^ 1]),  # one flipped bit
        b"x" + data[1:],  # another format
        data[: head + 3] + bytes([data[head + 3] ^ 1]) + data[head + 4 :],  # a wrong checksum
    ]


@pytest.mark.parametrize(
    ("module", "name", "key"),
    [("backward", name, "rmsnorm") for name in ["vjp", "jvp", "hvp", "hvp_along", "statistic_gradients", "symmetry"]]
    # The limits at the degenerate input: RMSNorm with epsilon outside the root has one (not RMSNorm).
    + [("backward", name, "rmsnorm_eps_outside") for name in ["vjp_at_degenerate", "jvp_at_degenerate"]]
    + [("spectral", name, "layernorm") for name in ["cases", "spectral_norm", "constant_input", "bound"]]
    + [("spectral", "triangle_bound", "prmsnorm")],
)
def test_the_backward_and_spectral_derivations_are_kept_for_the_next_process(module, name, key, cache_home):
    """Each backward form and each spectral-norm derivation of a catalog layer is derived once and
    kept in the derivation cache, whole: the entry a next process would read holds the value
    derived here."""
    import importlib
    import inspect

    layer = LAYERS[key]
    function = getattr(importlib.import_module(f"derivations.derive.{module}"), name)
    direction = layer.directions[0]
    args = (layer, direction, direction) if name == "hvp_along" else (layer,)
    wrapper = function
    while wrapper is not None:  # the process's own cache, under singledispatch: derived here, again
        getattr(wrapper, "cache_clear", lambda: None)()
        wrapper = getattr(wrapper, "__wrapped__", None)
    value = function(*args)
    entry = derivation_cache._entry(inspect.unwrap(function), args)
    assert entry is not None
    stored = derivation_cache.read(entry)
    assert stored is not None, f"{module}.{name} is not kept"
    assert derivation_cache.loads(stored) == value


@pytest.mark.parametrize("case", range(6))
def test_a_damaged_entry_is_a_miss_and_is_rewritten(case, cache_home):
    calls = []

    @derivation_cache.derived
    def square(value: int) -> int:
        calls.append(value)
        return value * value

    assert square(7) == 49
    (path,) = _entries(cache_home)
    square.cache_clear()  # type: ignore[attr-defined]
    assert square(7) == 49
    assert calls == [7], "a sound entry was derived again"
    path.write_bytes(_damaged(path.read_bytes())[case])
    square.cache_clear()  # type: ignore[attr-defined]
    assert square(7) == 49
    assert calls == [7, 7]
    assert derivation_cache.read(f"{square.__module__}.{square.__qualname__}(7)") is not None, "the bad entry stayed"


def test_an_entry_under_another_name_is_rejected(cache_home):
    derivation_cache.write("first", b"one")
    derivation_cache.write("second", b"two")
    first = next(path for path in _entries(cache_home) if path.read_bytes().endswith(b"one"))
    second = next(path for path in _entries(cache_home) if path.read_bytes().endswith(b"two"))
    shutil.copyfile(first, second)
    assert derivation_cache.read("second") is None
    assert derivation_cache.read("first") == b"one"


def test_concurrent_writers_leave_a_whole_entry(cache_home):
    payloads = [bytes([n]) * 200_000 for n in range(4)]
    seen: list[bytes | None] = []

    def writer(payload):
        for _ in range(15):
            derivation_cache.write("contended", payload)

    def reader():
        for _ in range(60):
            seen.append(derivation_cache.read("contended"))

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads] + [threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(found is None or found in payloads for found in seen)
    assert derivation_cache.read("contended") in payloads
    assert not [path for path in _entries(cache_home) if path.name.startswith(".tmp-")]


# --- the key ---------------------------------------------------------------------


def test_any_change_to_a_derivation_source_changes_the_key(tmp_path, monkeypatch):
    copy = tmp_path / "derivations"
    shutil.copytree(derivation_cache.SOURCES, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(derivation_cache, "SOURCES", copy)
    derivation_cache._sources.cache_clear()
    try:
        before = derivation_cache.key()
        (copy / "claims" / "latex.lark").write_bytes((copy / "claims" / "latex.lark").read_bytes() + b"\n")
        derivation_cache._sources.cache_clear()
        changed = derivation_cache.key()
        (copy / "new.py").write_text("")
        derivation_cache._sources.cache_clear()
        added = derivation_cache.key()
        (copy / "__pycache__").mkdir(exist_ok=True)
        (copy / "__pycache__" / "x.pyc").write_bytes(b"bytecode")
        derivation_cache._sources.cache_clear()
        assert derivation_cache.key() == added, "bytecode is not a source"
    finally:
        derivation_cache._sources.cache_clear()
    assert len({before, changed, added}) == 3


def test_versions_and_extra_bytes_change_the_key(monkeypatch):
    before = derivation_cache.key()
    assert derivation_cache.key(extra=b"[layer]\nkey = 'mine'\n") != before
    assert derivation_cache.key(extra=b"a") != derivation_cache.key(extra=b"b")
    derivation_cache.include(b"definition")
    assert derivation_cache.key() != before
    monkeypatch.setattr(derivation_cache, "_included", [])
    assert derivation_cache.key() == before
    monkeypatch.setattr(sys, "version", sys.version + " other")
    assert derivation_cache.key() != before
    monkeypatch.undo()
    real = derivation_cache._package
    monkeypatch.setattr(derivation_cache, "_package", lambda name: real(name) + (b"1.99" if name == "sympy" else b""))
    assert derivation_cache.key() != before
    with pytest.raises(TypeError, match="extra must be bytes"):
        derivation_cache.include("text")  # type: ignore[arg-type]


def test_the_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert derivation_cache.directory() == tmp_path / "epsilon-layernorm"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unusable in ("", "relative/path"):
        monkeypatch.setenv("XDG_CACHE_HOME", unusable)
        assert derivation_cache.directory() == tmp_path / "home" / ".cache" / "epsilon-layernorm"


# --- a cache that cannot be written ------------------------------------------------


def test_an_unwritable_cache_changes_nothing_a_command_prints(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert main(["--layer", "rmsnorm"]) == 0
    out, err = capsys.readouterr()
    assert (out in GOLDEN, err) == (True, "")


def test_a_full_disk_leaves_no_temporary(cache_home, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    derivation_cache.write("entry", b"payload")
    assert derivation_cache.read("entry") is None
    assert not _entries(cache_home)


# --- what is stored is what was derived ----------------------------------------------


def _tree(value):
    """Everything a value holds, SymPy nodes as their full structure (srepr), for exact comparison."""
    if isinstance(value, sp.Basic):
        return sp.srepr(value)
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, *map(_tree, value)]
    if isinstance(value, dict):
        return sorted((_tree(k), _tree(v)) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [type(value).__name__, *(_tree(getattr(value, f.name)) for f in dataclasses.fields(value))]
    return repr(value)


@pytest.mark.parametrize("key", list(LAYERS))
def test_stored_formulas_are_the_derived_trees(key):
    derived = tuple(formulas(key))  # the cache stores plain tuples; formulas() is a tuple with a display
    loaded = derivation_cache.loads(derivation_cache.dumps(derived))
    assert loaded == derived
    assert _tree(loaded) == _tree(derived)


@pytest.mark.parametrize("key", ["layernorm", "rmsnorm_affine"])
def test_catalog_objects_come_back_as_themselves(key):
    layer = LAYERS[key]
    pairs = derivation_cache.loads(derivation_cache.dumps(eigen.eigenpairs(layer)))
    assert [p.direction for p in pairs] == [p.direction for p in eigen.eigenpairs(layer)]
    assert all(any(p.direction is d for d in layer.directions) for p in pairs)
    assert derivation_cache.loads(derivation_cache.dumps(layer)) is layer
    bound = spectral.bound(layer) if key == "layernorm" else jacobian.entry(layer)
    assert _tree(derivation_cache.loads(derivation_cache.dumps(bound))) == _tree(bound)


def test_a_layer_outside_the_catalog_is_not_stored():
    copy = dataclasses.replace(LAYERS["rmsnorm"])
    assert derivation_cache._entry(jacobian.entry, (copy,)) is None
    assert (
        derivation_cache._entry(jacobian.entry, (LAYERS["rmsnorm"],))
        == "derivations.derive.jacobian.entry(layer:rmsnorm)"
    )


@pytest.mark.parametrize("options", [[], ["n=N", r"epsilon=\epsilon"]])
def test_rendered_rows_recalled_are_the_rows_rendered_now(options, cache_home):
    from derivations.catalog import _rendered, rows
    from derivations.notation import Notation

    notation = Notation.parse(options)
    _rendered.cache_clear()
    stored = rows(["layernorm", "rmsnorm_affine"], notation)  # rendered, and written to the empty cache
    _rendered.cache_clear()
    recalled = rows(["layernorm", "rmsnorm_affine"], notation)  # read back from the cache
    assert _entries(cache_home)
    fresh = [f.row(notation) for key in ("layernorm", "rmsnorm_affine") for f in formulas(key)]
    assert stored == recalled == fresh
    assert (recalled != rows(["layernorm", "rmsnorm_affine"])) == bool(options)  # the notation is in the key


def test_a_real_process_prints_its_whole_output_before_it_ends(capsys):
    """`cli.finish` ends the process with os._exit, which flushes nothing: the whole output, and a
    usage error's one line, are out before it, with the status."""
    from derivations.__main__ import main

    home = Path(os.environ["XDG_CACHE_HOME"])  # the test run's own cache
    argv = ["--layer", "layernorm_std_eps", "--format", "json"]
    assert main(argv) == 0
    expected = capsys.readouterr().out
    whole = _python(["-m", "derivations", *argv], home)
    assert (whole.returncode, whole.stderr) == (0, "")
    assert whole.stdout == expected
    assert len(expected) > 2 * 8192
    assert len(expected) % 8192
    wrong = _python(["-m", "derivations", "--format", "nonsense"], home)
    assert wrong.returncode == 2
    assert wrong.stdout == ""
    assert wrong.stderr.count("\n") == 1
    assert "--format" in wrong.stderr


def test_the_suite_keeps_the_current_keys_entries_between_runs_and_nothing_else(tmp_path, monkeypatch):
    """conftest.keep_derivations: the run's folder for the current key is the kept one; a stale
    key's folder is removed, and an entry under another key goes with the run's folder."""
    from conftest import keep_derivations

    kept, run = tmp_path / "kept", tmp_path / "run"
    (kept / "a-stale-key").mkdir(parents=True)
    (kept / "a-stale-key" / "entry").write_bytes(b"old")
    run.mkdir()
    keep_derivations(run, kept)
    current = kept / derivation_cache.key()
    assert [path.name for path in kept.iterdir()] == [current.name]
    monkeypatch.setenv("XDG_CACHE_HOME", str(run))
    monkeypatch.delenv(derivation_cache.ENVIRONMENT, raising=False)
    derivation_cache.write("probe", b"kept")
    derivation_cache.write("probe", b"not kept", extra=b"another key")
    assert derivation_cache.read("probe") == b"kept"
    shutil.rmtree(run)  # what the run does at its exit
    assert len(_entries(kept)) == 1
    run.mkdir()
    keep_derivations(run, kept)  # the next run
    assert derivation_cache.read("probe") == b"kept"
    assert derivation_cache.read("probe", extra=b"another key") is None


# --- entries nobody may plant ---------------------------------------------------------


def _square_cached(calls):
    @derivation_cache.derived
    def square(value: int) -> int:
        calls.append(value)
        return value * value

    return square, f"{square.__module__}.{square.__qualname__}(7)"


def _old_checksum(name: str, payload: bytes) -> bytes:
    digest = hashlib.sha256()
    for part in (name.encode(), payload):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.digest()


class _Gadget:
    """A pickle that runs a shell command when it is loaded."""

    def __init__(self, sentinel: Path) -> None:
        self.sentinel = sentinel

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(str(self.sentinel))}",)


def _gadgets(sentinel: Path) -> list[bytes]:
    command = f"__import__('os').system('touch {sentinel}')"
    return [
        pickle.dumps(_Gadget(sentinel)),
        pickle.dumps([1, _Gadget(sentinel)], protocol=0),
        # A SymPy function sympifies a string argument, and sympify evaluates it.
        json.dumps(["N", "sympy.functions.elementary.trigonometric:sin", command]).encode(),
        json.dumps(["N", "sympy.core.function:Function", command]).encode(),
        json.dumps(["C", "os:system", {"command": f"touch {sentinel}"}]).encode(),
        json.dumps(["C", "derivations.cache:os", {"command": f"touch {sentinel}"}]).encode(),
        json.dumps(["E", "builtins:eval", command]).encode(),
        json.dumps(["S", "__call__"]).encode(),
    ]


@pytest.mark.parametrize("case", range(8))
def test_an_authenticated_gadget_never_runs_and_the_value_is_derived_again(case, cache_home, tmp_path):
    calls: list[int] = []
    square, name = _square_cached(calls)
    sentinel = tmp_path / "ran"
    derivation_cache.write(name, _gadgets(sentinel)[case])  # sealed with this user's own key
    assert square(7) == 49
    assert not sentinel.exists(), "the entry ran code"
    assert calls == [7]
    assert derivation_cache.loads(derivation_cache.read(name)) == 49, "the planted entry stayed"


def test_only_data_round_trips():
    from derivations.core.formula import Established

    value = {"a": (1, [None, True, "x"]), 2: Established.LIMIT, "f": sp.Function("f", real=True)(sp.Symbol("x"))}
    assert derivation_cache.loads(derivation_cache.dumps(value)) == value
    for unstored in (object(), sp.Dummy("d"), sp.Function("g"), float("inf"), {1, 2}, os.system):
        with pytest.raises((TypeError, ValueError)):
            derivation_cache.dumps(unstored)


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        (["N", "sympy.functions.elementary.trigonometric:sin", "x"], "sin: an argument that is not a SymPy node"),
        (["N", "sympy.core.add:Add", ["I", 1], 2.5], "Add: an argument that is not a SymPy node"),
        (["C", "os:system", {"command": "x"}], "no project class 'os:system'"),
        (["E", "builtins:eval", "x"], "no project class 'builtins:eval'"),
        (["S", "__call__"], "no singleton '__call__'"),
        (["S", 3], "no singleton 3"),
        (["Y", 3], "not a name: 3"),
        (["F", None, []], "not a name: None"),
        (["I", "1"], "not integers"),
        (["Q", 1, "2"], "not integers"),
        (["W"], "no kind 'W'"),
        ({"a": 1}, "a bare JSON object"),
    ],
)
def test_an_entry_that_is_not_stored_data_is_a_value_error_saying_what(tree, message):
    """What the reader refuses, it refuses as a ValueError naming the part it refused (the cache
    treats a ValueError as a miss), never by handing a string to a SymPy class."""
    with pytest.raises(ValueError, match=re.escape(message)):
        derivation_cache.loads(json.dumps(tree).encode())


def _plant_old_style(name: str, payload: bytes, extra: bytes = b"", magic: bytes = b"") -> None:
    path = derivation_cache._path(name, extra)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((magic or derivation_cache.MAGIC) + _old_checksum(name, payload) + payload)


@pytest.mark.parametrize("magic", [b"epsilon-layernorm derivation cache 1\n", b""])
def test_a_forged_verdict_with_a_bare_checksum_is_not_printed(magic, cache_home, capsys):
    from derivations.__main__ import _CACHED_CHECK_OPTIONS, _confirming_code, _output_entry

    argv = ["slope_at_zero == 1/sqrt(epsilon)", "--layer", "layernorm_std_eps"]
    name = _output_entry(argv, " check", _CACHED_CHECK_OPTIONS)
    derivation_cache.write("another entry", b"", _confirming_code())  # the folder and its key exist
    _plant_old_style(name, b"0\nproved (forged)\n", _confirming_code(), magic)
    assert main(["check", *argv]) == 1
    out = capsys.readouterr().out
    assert "refuted" in out
    assert "forged" not in out


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder", "dangling"])
def test_an_entry_that_is_not_a_regular_file_is_a_miss_and_is_replaced(kind, cache_home, capsys):
    calls: list[int] = []
    square, name = _square_cached(calls)
    derivation_cache.write(name, derivation_cache.dumps(49))
    path = derivation_cache._path(name, b"")
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero" if kind == "dev-zero" else path.parent / "nowhere")
    done: list[int] = []
    reader = threading.Thread(target=lambda: done.append(square(7)), daemon=True)
    reader.start()
    reader.join(60)
    assert done == [49], "reading the entry blocked or failed"
    assert calls == [7]
    said = capsys.readouterr().err
    if kind != "folder":  # a folder in the way stays: the value is only returned
        assert path.is_file()
        assert not path.is_symlink()
        assert said == ""
    else:  # and it says so, once: else every run derives it again, silently
        assert said.count("\n") == 1, said
        assert "a folder is in the way of the cache entry" in said
        assert square(7) == 49
        assert "in the way" not in capsys.readouterr().err
        # A folder at a second entry's name: still that one line (a planted cache gave one a line).
        other = derivation_cache._path("another entry", b"")
        other.mkdir()
        derivation_cache.write("another entry", derivation_cache.dumps(1))
        assert "in the way" not in capsys.readouterr().err


def test_an_entry_larger_than_the_cap_is_a_miss(cache_home, monkeypatch):
    monkeypatch.setattr(derivation_cache, "LIMIT", 1000)
    derivation_cache.write("large", b"x" * 1000)
    assert derivation_cache.read("large") is None
    derivation_cache.write("small", b"x" * 900)
    assert derivation_cache.read("small") == b"x" * 900


def test_folders_are_private_and_the_key_is_read_only_to_its_owner(cache_home):
    derivation_cache.write("entry", b"payload")
    folder = derivation_cache._path("entry", b"").parent
    for path, mode in ((cache_home, 0o700), (folder, 0o700), (folder / derivation_cache.SECRET, 0o600)):
        assert os.stat(path).st_mode & 0o777 == mode, path
    assert os.stat(folder / derivation_cache.SECRET).st_size == 32


def _as_another_user(path: Path) -> None:
    os.chown(path, os.getuid() + 4242, -1, follow_symlinks=False)


_ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user takes root")


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("entry", lambda path: path.chmod(0o606)),
        ("folder", lambda path: path.chmod(0o720)),
        ("root", lambda path: path.chmod(0o707)),
        ("secret", lambda path: path.chmod(0o644)),
        pytest.param("entry", _as_another_user, marks=_ROOT_ONLY),
        pytest.param("folder", _as_another_user, marks=_ROOT_ONLY),
        pytest.param("root", _as_another_user, marks=_ROOT_ONLY),
        pytest.param("secret", _as_another_user, marks=_ROOT_ONLY),
    ],
)
def test_a_cache_others_can_write_is_not_used_and_the_output_is_unchanged(where, change, cache_home, capsys):
    argv = ["--layer", "rmsnorm"]
    derivation_cache.write(_entry(argv), b"forged output\n")
    path = derivation_cache._path(_entry(argv), b"")
    change(
        {"entry": path, "folder": path.parent, "root": cache_home, "secret": path.parent / derivation_cache.SECRET}[
            where
        ]
    )
    printed = []
    for _ in range(2):
        assert main(argv) == 0
        printed.append(capsys.readouterr())
    assert printed[0].out == printed[1].out
    assert printed[0].out in GOLDEN
    assert "forged" not in printed[0].out
    err = printed[0].err + printed[1].err
    assert err.count("\n") == 1, err
    assert err.startswith(f"{derivation_cache.PROJECT}: not using the derivation cache: ")


@pytest.mark.parametrize("kind", ["short", "long", "fifo", "symlink", "folder"])
def test_a_key_that_is_not_a_private_file_of_32_bytes_means_no_cache(kind, cache_home, capsys):
    derivation_cache.write("entry", b"payload")
    secret = derivation_cache._path("entry", b"").parent / derivation_cache.SECRET
    real = secret.read_bytes()
    secret.unlink()
    if kind in ("short", "long"):
        secret.write_bytes(real[:-1] if kind == "short" else real + b"\0")
        secret.chmod(0o600)
    elif kind == "fifo":
        os.mkfifo(secret, 0o600)
    elif kind == "symlink":
        (secret.parent / "elsewhere").write_bytes(real)
        secret.symlink_to(secret.parent / "elsewhere")
    else:
        secret.mkdir(0o700)
    assert derivation_cache.read("entry") is None
    derivation_cache.write("entry", b"again")
    assert derivation_cache.read("entry") is None
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize(
    ("mode", "size", "why"),
    [(0o640, 0, "is readable by group or others"), (0o600, -1, "is not a regular file of 32 bytes")],
)
def test_a_refused_key_is_named_with_what_is_wrong_with_it(mode, size, why, cache_home, capsys):
    derivation_cache.write("entry", b"payload")
    secret = derivation_cache._path("entry", b"").parent / derivation_cache.SECRET
    secret.write_bytes(secret.read_bytes()[: len(secret.read_bytes()) + size])
    secret.chmod(mode)
    assert derivation_cache.read("entry") is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.rstrip().endswith(f"{str(secret)!r} {why}"), err


@pytest.mark.parametrize("alias", ["AAA_alias", "zzz_alias"])
def test_a_name_bound_to_a_project_class_of_another_name_is_refused(alias, monkeypatch):
    """An entry names a class by its own module and qualified name: a module attribute bound to a
    class of another name (sorting before or after it) does not reach it."""
    from derivations.core import formula as _formula
    from derivations.core import layer as _layer

    enum_entry = derivation_cache.dumps(_formula.Established.LIMIT)
    pattern = _layer.Pattern((sp.Integer(1), sp.Integer(2)), coordinate=1)
    class_entry = derivation_cache.dumps(pattern)
    assert derivation_cache.loads(enum_entry) is _formula.Established.LIMIT
    recalled = derivation_cache.loads(class_entry)
    assert type(recalled) is _layer.Pattern
    assert (recalled.values, recalled.coordinate) == (pattern.values, pattern.coordinate)
    monkeypatch.setattr(_formula, alias, _formula.Established, raising=False)
    monkeypatch.setattr(_layer, alias, _layer.Pattern, raising=False)
    stored = ((enum_entry, "derivations.core.formula:Established"), (class_entry, "derivations.core.layer:Pattern"))
    for entry, real in stored:
        assert real.encode() in entry
        module = real.partition(":")[0]
        forged = entry.replace(real.encode(), f"{module}:{alias}".encode())
        with pytest.raises(ValueError, match="no project class"):
            derivation_cache.loads(forged)


def test_a_reference_to_a_layer_not_built_yet_builds_it_and_an_unknown_one_is_refused(tmp_path):
    """An entry read before the layer it names is built (a fresh process that imported only the
    catalog) resolves to that layer and its parts, never to a miss; a name no layer has is a ValueError."""
    code = (
        "import json; from derivations import cache, catalog\n"
        "assert not any(layer.key == 'rmsnorm' for layer in catalog.LAYERS.loaded())\n"
        'layer = cache.loads(b\'["R", "layer:rmsnorm"]\')\n'
        "assert layer is catalog.LAYERS['rmsnorm']\n"
        'assert cache.loads(b\'["R", "statistics:rmsnorm:0"]\') is layer.statistics[0]\n'
        "for unknown in ('layer:nosuch', 'layer', 'a:rmsnorm:0:1'):\n"
        "    try:\n"
        "        cache.loads(json.dumps(['R', unknown]).encode())\n"
        "    except ValueError:\n"
        "        continue\n"
        "    raise AssertionError(unknown)\n"
    )
    ran = _python(["-c", code], tmp_path)
    assert ran.returncode == 0, ran.stderr
