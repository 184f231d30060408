# Every target sets up .venv itself: on a fresh machine only Python is needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# What each target needs, installed once: the runtime alone (make derive, figures, review), with
# the test extra (make test), the linters, cosmic-ray.
RUNTIME := $(VENV)/.runtime
STAMP := $(VENV)/.installed
LINT := $(VENV)/.lint
MUTATION := $(VENV)/.mutation
# Bytecode goes to .venv/pycache, not beside the sources, and is written even where
# PYTHONDONTWRITEBYTECODE is set: otherwise every test worker, and every process a test
# starts, compiles each module (and pytest rewrites each test file) again.
export PYTHONPYCACHEPREFIX := $(abspath $(VENV))/pycache
export PYTHONDONTWRITEBYTECODE :=

.PHONY: derive test test-slow test-all figures report check bench bench-peers crosscheck accuracy clean golden mutation review docs docs-check

$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	# Bytecode beside the sources as well (pip wrote it under PYTHONPYCACHEPREFIX, below): then
	# .venv/bin/python run by hand, where PYTHONDONTWRITEBYTECODE is set, starts as fast as under
	# make.  Only a speed-up: a file that does not compile is left to fail where it is imported.
	env -u PYTHONPYCACHEPREFIX $(PY) -m compileall -q -j 0 $(VENV)/lib derivations numeric figures > /dev/null || true
	touch $@

$(STAMP): $(RUNTIME)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(LINT): $(RUNTIME)
	$(PY) -m pip install --quiet -e '.[lint]'
	touch $@

$(MUTATION): $(STAMP)
	$(PY) -m pip install --quiet -e '.[mutation]'
	touch $@

derive: $(RUNTIME)
	$(PY) -m derivations

# Every core, up to eight: the suite is CPU-bound SymPy and NumPy work, and each worker
# derives and compiles what its tests touch once (more workers repeat that more times).
WORKERS := -n auto --maxprocesses 8
# A whole tier: each worker derives every layer before collection, from a starting layer of its
# own, so that cold, the workers share the derivation instead of each doing all of it (tests/conftest.py).
SUITE := EPSILON_LAYERNORM_TEST_DERIVE_FIRST=1 $(PY) -m pytest -q $(WORKERS)
# make test is the fast tier: every test function, at least at its first cases, and each
# layer-parametrized one on the core layer and one other.  The cases marked slow repeat a
# check at larger sizes, on the grids against mpmath, or on the other layers
# (tests/grids.py); CI runs them too (.ci/run).
test: $(STAMP)
	$(SUITE) -m "not slow"

test-slow: $(STAMP)
	$(SUITE) -m slow

test-all: $(STAMP)
	$(SUITE)

# Verification runs first inside `python -m figures`; a failure writes no PNG.
figures: $(RUNTIME)
	$(PY) -m figures

# The derivation sheet a reviewer can attach: build/report.md, with the figures.
report: figures
	$(PY) -m figures.report

check: $(STAMP) $(LINT)
	$(PY) -m ruff check derivations numeric figures tests
	$(PY) -m ruff format --check derivations numeric figures tests
	$(PY) -m mypy
	$(SUITE)

# PyTorch's CPU build, JAX (CPU) and Flax, pinned, by name from the package index, only for this check.
crosscheck: $(STAMP)
	$(PY) -m pip install --quiet 'torch==2.13.0' -e '.[crosscheck]'
	$(PY) tests/crosscheck/torch_reference.py
	$(PY) tests/crosscheck/jax_reference.py
	# Again on NumPy's path, where the above ran the compiled one (numeric.backend()).
	EPSILON_LAYERNORM_BACKEND=numpy $(PY) tests/crosscheck/torch_reference.py
	EPSILON_LAYERNORM_BACKEND=numpy $(PY) tests/crosscheck/jax_reference.py
	EPSILON_LAYERNORM_REQUIRE_TORCH=1 $(PY) -m pytest -q -p no:cacheprovider tests/test_codegen.py -k torch

# Worst errors against mpmath over the floating-point range; rewrites the accuracy block of docs/accuracy.md.
accuracy: $(STAMP)
	$(PY) tests/accuracy/report.py --readme

# Mutation testing, each mutant against the suite with -x: the score, and every survivor not
# listed in tests/mutation/equivalent.txt.  First a fresh sample of SAMPLE mutants drawn from
# cosmic-ray's operators and the generic ones (tests/mutation/generic.py), seeded by the commit
# checked out (SEED=commit) or by SEED; then the regression set, cosmic-ray's sample of seed 15.
# Long: three minutes to find the tests running each drawn statement (tests/mutation/probe.py),
# then seconds for most mutants on two cores, a few minutes for one those tests miss.
SAMPLE ?= 100
SEED ?= commit
mutation: $(MUTATION)
	$(PY) tests/mutation/run.py --sample $(SAMPLE) --seed $(SEED)
	$(PY) tests/mutation/run.py --sample 100 --seed 15 --operators cosmic

# Review the example paper: every relation read, classified and checked (examples/paper/review.md).
# The paper states false relations on purpose: review's status 1 (refuted relations found) is its
# expected outcome here, not a failure of the target.
review: $(RUNTIME)
	$(PY) -m derivations review examples/paper/main.tex || [ $$? -eq 1 ]

bench: $(STAMP)
	$(PY) tests/benchmarks/bench_seed.py
	$(PY) tests/benchmarks/bench_review.py
	$(PY) tests/benchmarks/bench_peers.py

# The numeric functions against the best peers (hand-fused NumPy, torch on one thread and on all,
# jax.jit where installed, the copy-bandwidth floor), interleaved, 15 rounds a row: long.
bench-peers: $(STAMP)
	$(PY) tests/benchmarks/bench_peers.py

# Rewrite the committed golden output, and the README and docs blocks generated from
# the derivations, after a deliberate change to a formula.
golden: $(STAMP)
	$(PY) -m derivations > tests/golden/derive.txt
	$(PY) tests/golden/readme.py

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache $(VENV)/pycache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# The documentation site (mkdocs.yml, docs/) into build/site, every warning an error; the docs
# extra is installed the first time.
docs: $(RUNTIME)
	$(PY) -c "import mkdocs, material, mkdocstrings_handlers.python, pymdownx" 2>/dev/null || $(PY) -m pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir build/site

# The built site in headless Chromium (Debian's chromium): every page, the conventions table and
# the claim reference first, fails on raw TeX or a console error; the screenshot is
# build/docs-screenshot.png.
docs-check: docs
	$(PY) tests/docs_browser.py --site build/site --screenshot build/docs-screenshot.png
