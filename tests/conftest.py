"""Shared fixtures: a seeded generator and a deterministic hypothesis profile."""

import numpy as np
import pytest
from hypothesis import settings

# Scripts run by make targets, not tests; crosscheck needs torch, which
# `make test` does not install.
collect_ignore_glob = ["crosscheck/*", "benchmarks/*", "golden/*", "accuracy/*"]

# Derandomized so a failure reproduces; no deadline because the first call
# of a numeric function compiles its lambdified code.
settings.register_profile("project", derandomize=True, deadline=None, max_examples=60)
settings.load_profile("project")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)
