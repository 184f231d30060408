"""Shared fixtures: a seeded generator, a deterministic hypothesis profile, and a derivation cache of the run's own."""

import atexit
import os
import shutil
import tempfile

import numpy as np
import pytest
from hypothesis import settings

# The size SymPy's cache is asked for before `derivations` sets its own: the user's, or in an xdist
# worker the controller's (inherited).  test_lambdified checks that SymPy got it.
USER_SYMPY_CACHE_SIZE = os.environ.get("SYMPY_CACHE_SIZE")

import derivations  # noqa: E402, F401 - before SymPy, so that its cache is the size the commands use

# The derivation cache of this run: a fresh folder, shared with the xdist
# workers and every process a test starts (they inherit the environment), so
# that no test reads or writes the user's cache and none depends on its state.
# The process that made it removes it at exit.
if "EPSILON_LAYERNORM_TEST_CACHE" not in os.environ:
    _folder = tempfile.mkdtemp(prefix="epsilon-layernorm-test-cache-")
    os.environ["EPSILON_LAYERNORM_TEST_CACHE"] = os.environ["XDG_CACHE_HOME"] = _folder
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)
os.environ["XDG_CACHE_HOME"] = os.environ["EPSILON_LAYERNORM_TEST_CACHE"]
os.environ.pop("EPSILON_LAYERNORM_NO_CACHE", None)

# Scripts run by make targets, not tests; crosscheck needs torch, which
# `make test` does not install.
collect_ignore_glob = ["crosscheck/*", "benchmarks/*", "golden/*", "accuracy/*"]

# Derandomized so a failure reproduces; no deadline because the first call
# of a numeric function compiles its lambdified code.
settings.register_profile("project", derandomize=True, deadline=None, max_examples=60)
settings.load_profile("project")


@pytest.fixture(autouse=True)
def _cache_on_again(monkeypatch):
    """`--no-cache` turns the cache off for the rest of a process; an in-process test gets it back after."""
    from derivations import _cache

    monkeypatch.setattr(_cache, "_disabled", False)
    monkeypatch.setattr(_cache, "_included", [])


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)


def functions_without_a_fast_case(items) -> list[str]:
    """The test functions all of whose cases are marked slow (tests/grids.py: none may be)."""
    functions = {item.nodeid.split("[")[0] for item in items}
    fast = {item.nodeid.split("[")[0] for item in items if item.get_closest_marker("slow") is None}
    return sorted(functions - fast)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """make test's fast tier keeps every test function: a function whose every case is slow is an error.
    Checked where the fast tier is asked for; one slow case by its id, or --lf, runs as asked."""
    if config.getoption("markexpr") != "not slow":
        return
    lacking = functions_without_a_fast_case(items)
    if lacking:
        raise pytest.UsageError(f"{lacking[0]}: every case is marked slow; make test would never run it")
