"""Shared fixtures: a seeded generator, a deterministic hypothesis profile, and a derivation cache of the run's own
(its derivations' entries kept between runs)."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

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
# The derivations' own entries (the folder of the current key: derived formulas and rendered rows)
# are kept between runs in build/test-cache/, so that a second make test does not derive again
# what the first one did.  Any change under derivations/, to SymPy or to Python is another key: a
# cold start, and the folders of other keys are removed.  Whatever a test stores under another key
# (figures, a user-defined layer, a test's own key) stays in the run's folder and goes with it.
# CI runs from a fresh clone, cold; tests/test_cache.py gives each test an empty folder of its own.
KEPT = Path(__file__).resolve().parent.parent / "build" / "test-cache"


def keep_derivations(folder: Path, kept: Path = KEPT) -> None:
    """Make the current key's folder under ``folder`` a link to the one kept in ``kept``;
    where that cannot be done (no build/ to write), the run starts cold, as before."""
    from derivations import cache as derivation_cache

    current = kept / derivation_cache.key()
    try:
        current.mkdir(parents=True, exist_ok=True, mode=0o700)
        for stale in kept.iterdir():
            if stale != current:
                shutil.rmtree(stale, ignore_errors=True)
        (folder / derivation_cache.PROJECT).mkdir(exist_ok=True, mode=0o700)
        (folder / derivation_cache.PROJECT / current.name).symlink_to(current, target_is_directory=True)
    except OSError:
        pass


if "EPSILON_LAYERNORM_TEST_CACHE" not in os.environ:
    _folder = tempfile.mkdtemp(prefix="epsilon-layernorm-test-cache-")
    os.environ["EPSILON_LAYERNORM_TEST_CACHE"] = os.environ["XDG_CACHE_HOME"] = _folder
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)
    keep_derivations(Path(_folder))
os.environ["XDG_CACHE_HOME"] = os.environ["EPSILON_LAYERNORM_TEST_CACHE"]
os.environ.pop("EPSILON_LAYERNORM_NO_CACHE", None)

# Scripts run by make targets, not tests; crosscheck needs torch and mutation cosmic-ray, which
# `make test` does not install.
collect_ignore_glob = ["crosscheck/*", "benchmarks/*", "golden/*", "accuracy/*", "mutation/*"]

# Derandomized so a failure reproduces; no deadline because the first call
# of a numeric function compiles its lambdified code.
settings.register_profile("project", derandomize=True, deadline=None, max_examples=60)
settings.load_profile("project")


@pytest.fixture(autouse=True)
def _cache_on_again(monkeypatch):
    """`--no-cache` turns the cache off for the rest of a process; an in-process test gets it back after."""
    from derivations import cache as derivation_cache

    monkeypatch.setattr(derivation_cache, "_disabled", False)
    monkeypatch.setattr(derivation_cache, "_included", [])


@pytest.fixture(autouse=True)
def _unregister():
    """A layer a test registers (a definition file, `numeric.from_definition`) must not leak into
    the tests after it that iterate over the catalog."""
    yield
    from derivations import LAYERS, catalog

    for key in set(LAYERS) - set(catalog.BUILT_IN):
        catalog.unregister(key)


@pytest.fixture
def numpy_backend(monkeypatch):
    """The NumPy path for every layer, the compiled one off (`numeric.kernels.native`), for this test."""
    from numeric.kernels import native

    monkeypatch.setenv(native.ENVIRONMENT, "numpy")
    native.clear()
    yield
    monkeypatch.undo()
    native.clear()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)


def functions_without_a_fast_case(items) -> list[str]:
    """The test functions all of whose cases are marked slow (tests/grids.py: none may be)."""
    from grids import function_of

    functions = {function_of(item) for item in items}
    fast = {function_of(item) for item in items if item.get_closest_marker("slow") is None}
    return sorted(functions - fast)


def pytest_configure(config):
    """In an xdist worker of a whole tier's run (the Makefile sets EPSILON_LAYERNORM_TEST_DERIVE_FIRST),
    before collection: every layer's rows, the workers starting at evenly spaced points of the
    catalog.  Such a run's tests touch every layer; cold, each worker derived them all, in the same
    order, at the same time.  Now each derives about its share and reads the rest from the run's
    cache, where another worker wrote them.  Warm, all are read back (0.3 s).  A run of a few tests
    derives only what they touch, as before."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None or not os.environ.get("EPSILON_LAYERNORM_TEST_DERIVE_FIRST"):
        return
    from derivations.catalog import LAYERS, rows

    keys = list(LAYERS)
    start = int(worker.removeprefix("gw")) * len(keys) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    for key in keys[start:] + keys[:start]:
        try:
            rows([key])
        except Exception:  # only a head start: the tests that need the layer report it
            continue


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The tiers (tests/grids.py: one other layer than the core one per test function in the fast tier),
    and make test's fast tier keeps every test function: a function whose every case is slow is an
    error.  Checked where the fast tier is asked for; one slow case by its id, or --lf, runs as asked."""
    from grids import one_other_layer

    one_other_layer(items)
    if config.getoption("markexpr") != "not slow":
        return
    lacking = functions_without_a_fast_case(items)
    if lacking:
        raise pytest.UsageError(f"{lacking[0]}: every case is marked slow; make test would never run it")
