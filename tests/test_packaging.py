"""The wheel, installed into a fresh virtual environment in another folder, runs every command:
what the commands read at run time ships as package data, and every runtime import is declared."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the fresh environment's bin folder, an empty working folder outside the project)."""
    base = tmp_path_factory.mktemp("wheel")
    # Without PYTHONPATH (as the commands run, `_run`): on it, the checkout's metadata, which
    # building the wheel writes there, counts as installed, and pip leaves the wheel out.
    environment = _outside()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(base / "dist"), str(ROOT)],
        check=True,
        capture_output=True,
        env=environment,
    )
    (wheel,) = (base / "dist").glob("epsilon_layernorm-*.whl")
    venv.create(base / "env", with_pip=True)
    bin_folder = base / "env" / "bin"
    install = [str(bin_folder / "python"), "-m", "pip", "install", "--quiet", str(wheel)]
    subprocess.run(install, check=True, env=environment)
    work = base / "work"
    work.mkdir()
    shutil.copytree(ROOT / "examples" / "paper", work / "paper", ignore=shutil.ignore_patterns("review.*"))
    return bin_folder, work


def _outside() -> dict[str, str]:
    """The environment without the checkout's path or virtual environment."""
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _run(installed, *command: str) -> subprocess.CompletedProcess[str]:
    bin_folder, work = installed
    program = [str(bin_folder / command[0]), *command[1:]]
    return subprocess.run(program, cwd=work, capture_output=True, text=True, env=_outside(), timeout=1800)


def test_the_wheel_ships_its_data_and_no_project_folder(installed):
    done = _run(
        installed,
        "python",
        "-c",
        "import figures.report as r, derivations; print(r.EXAMPLES.is_file(), derivations.__file__)",
    )
    assert done.returncode == 0, done.stderr
    shipped, location = done.stdout.split()
    assert shipped == "True"
    assert str(ROOT) not in location  # the installed copy, not the checkout


SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    ("commands", "status"),
    [
        ([("epsilon-layernorm", "check", "slope_at_zero == 1/sqrt(epsilon)")], 0),
        pytest.param(
            [("python", "-m", "derivations", "check", "--layer", "rmsnorm", "norm(J, 2) <= 1/epsilon")], 1, marks=SLOW
        ),
        pytest.param([("python", "-m", "derivations", "--layer", "rmsnorm", "--format", "latex")], 0, marks=SLOW),
        pytest.param(
            [("python", "-m", "derivations", "identify", "--latex", r"y = \frac{x - \mu}{\sigma + \epsilon}")],
            0,
            marks=SLOW,
        ),
        pytest.param(
            [("python", "-m", "derivations", "codegen", "--layer", "layernorm", "--target", "numpy")], 0, marks=SLOW
        ),
        pytest.param([("python", "-m", "figures"), ("python", "-m", "figures.report")], 0, marks=SLOW),
        # The example paper holds refuted relations: status 1.
        pytest.param([("python", "-m", "derivations", "review", "paper/main.tex")], 1, marks=SLOW),
    ],
    ids=["check", "refuted", "derive", "identify", "codegen", "report", "review"],
)
def test_every_command_runs_from_the_wheel(installed, commands, status):
    for number, command in enumerate(commands, 1):
        done = _run(installed, *command)
        assert done.returncode == (status if number == len(commands) else 0), done.stderr
        assert "Traceback" not in done.stderr
        assert done.stdout
