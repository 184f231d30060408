"""Outputs: a figure set and the report are written whole or not at all; every command fails in one line."""

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from matplotlib.figure import Figure

import figures
import figures.__main__ as figures_command
from derivations import claims
from figures import report
from numeric import verify

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("a.png", "b.png", "c.png")
CLAIM = "slope_at_zero == 1/sqrt(epsilon)"


def _tiny(name):
    def draw():
        figure = Figure(figsize=(1, 1), dpi=20)
        figure.add_subplot().plot([0, 1])
        return figure

    return SimpleNamespace(FILENAME=name, draw=draw, __doc__=f"Figure {name}")


@pytest.fixture
def fast(monkeypatch):
    """Three tiny figures, a verification that passes at once, and no example claims to check."""
    tiny = tuple(_tiny(name) for name in NAMES)
    for module in (figures, figures_command, report):
        monkeypatch.setattr(module, "FIGURES", tiny)
    monkeypatch.setattr(verify, "run", lambda seed=0: {"agreement": 1})
    monkeypatch.setattr(claims, "load", lambda path: [])


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _python_m(module, argv, monkeypatch):
    """``python -m module argv`` in this process: its ``__main__`` block, then the flush at exit."""
    name = f"{module}.__main__" if module in ("derivations", "figures") else module
    monkeypatch.setattr(sys, "argv", [name, *argv])
    monkeypatch.delitem(sys.modules, name, raising=False)  # runpy runs a fresh copy; a loaded one would warn
    try:
        runpy.run_module(name, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as stop:
        status = stop.code
    sys.stdout.flush()  # what the interpreter does at exit: a failure here is a traceback
    return status


# What each case sets up in its (current) folder before the command runs.


def _nothing(tmp, monkeypatch):
    pass


# module, argv, stdout (None: captured), arrange, exit status, the one stderr line (None: silent), new files.
CASES = {
    # 7. Unknown flags are refused.
    "numeric.verify --bogus": (
        "numeric.verify",
        ["--bogus"],
        None,
        _nothing,
        2,
        "python -m numeric.verify: error: unrecognized arguments: --bogus",
        set(),
    ),
    # 8. A reader that stopped early ends quietly with 0; a full device is one line and 2.
    "derivations | head -1": ("derivations", ["--layer", "rmsnorm"], "closed pipe", _nothing, 0, None, set()),
    "derivations > /dev/full": (
        "derivations",
        ["--layer", "rmsnorm"],
        "/dev/full",
        _nothing,
        2,
        "python -m derivations: error: No space left on device",
        set(),
    ),
    "derivations check | head -1": ("derivations", ["check", CLAIM], "closed pipe", _nothing, 0, None, set()),
    "derivations check > /dev/full": (
        "derivations",
        ["check", CLAIM],
        "/dev/full",
        _nothing,
        2,
        "python -m derivations: error: No space left on device",
        set(),
    ),
    "numeric.verify | head -1": ("numeric.verify", [], "closed pipe", _nothing, 0, None, set()),
    "numeric.verify > /dev/full": (
        "numeric.verify",
        [],
        "/dev/full",
        _nothing,
        2,
        "python -m numeric.verify: error: No space left on device",
        set(),
    ),
}


def _stdout(kind):
    if kind == "closed pipe":
        read, write = os.pipe()
        os.close(read)
        return open(write, "w")
    return open(kind, "w")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.usefixtures("fast")
def test_a_command_ends_in_its_status_and_at_most_one_line(case, tmp_path, monkeypatch, capsys):
    module, argv, stdout, arrange, status, line, new = CASES[case]
    if stdout == "/dev/full" and not Path(stdout).exists():
        pytest.skip("no /dev/full here")
    monkeypatch.chdir(tmp_path)
    arrange(tmp_path, monkeypatch)
    before = _tree(tmp_path)
    if stdout is None:
        assert _python_m(module, argv, monkeypatch) == status
    else:
        with _stdout(stdout) as file, monkeypatch.context() as patch:
            patch.setattr(sys, "stdout", file)
            assert _python_m(module, argv, monkeypatch) == status
    err = capsys.readouterr().err
    if line is None:
        assert err == ""
    else:
        assert len(err.splitlines()) == 1, err
        assert re.fullmatch(line, err.strip()), err
    after = _tree(tmp_path)
    assert set(after) - set(before) == new, "no temporary left, and nothing written that should not be"
    assert {name: after.get(name) for name in before} == before, "the old files are kept byte for byte"


def test_a_real_process_ends_without_a_traceback():
    """The interpreter's own flush at exit finds nothing left to fail on; stdout buffered, as by default."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    command = [sys.executable, "-m", "derivations", "--layer", "rmsnorm"]
    expected = {"closed pipe": (0, ""), "/dev/full": (2, "python -m derivations: error: No space left on device\n")}
    running = {}
    for stdout in expected:  # at once: each spends its time starting up
        with _stdout(stdout) as file:
            running[stdout] = subprocess.Popen(
                command, stdout=file, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=environment
            )
    for stdout, process in running.items():
        _, err = process.communicate(timeout=60)
        assert (process.returncode, err) == expected[stdout]
