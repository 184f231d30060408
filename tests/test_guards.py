"""The guards a plausible bug would slip past: each test here fails on one such bug (tests/mutation/)."""

import dataclasses
import inspect
import itertools
import os
import re
import secrets
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
import sympy as sp
from docs_text import docs_words
from grids import slow

import figures.__main__ as figures_command
import numeric
from derivations import DerivationError, quantities
from derivations.catalog import LAYERS
from derivations.claims import Claim, ClaimError, bounded, check, checker, parse, sampling, semantics, vocabulary
from derivations.claims.confirm import confirm
from derivations.claims.semantics import Vector
from derivations.derive import jacobian
from derivations.derive.elementwise import Largest
from derivations.derive.sums import PowerSum
from derivations.symbols import epsilon, i, k, x
from figures._output import write_all
from numeric import facade
from numeric.checks import accuracy, verify
from numeric.checks.agreement import AgreementError, assert_agree
from numeric.kernels import kernel as _kernel
from numeric.kernels.lambdify import compile

# --- forward on more rows than one block holds --------------------------------


@pytest.mark.parametrize(("key", "size"), [("layernorm", 64), ("rmsnorm_affine", 48), ("layernorm_std_eps", 3)])
def test_forward_on_many_blocks_uses_each_rows_epsilon_and_parameters(key, size, numpy_backend):
    """(On NumPy's path: per-row parameters are its, where a row alone may run compiled.)
    Two whole blocks of the fused program and a partial third, with an epsilon and a gain per
    row, and rows the program cannot take as they are (their scale near 1e±200, computed again
    rescaled) in each block: the forward pass and the vjp of each row as if it were alone."""
    layer = facade(key)
    step = max(1, _kernel.FUSED_BLOCK // size)
    rows = 2 * step + 3
    rng = np.random.default_rng(7)
    scale = np.logspace(-4, 4, rows)
    far = np.array([1, 2, step + 1, step + 2, 2 * step + 1, 2 * step + 2, *rng.choice(rows, 6, replace=False)])
    scale[far] = np.where(np.arange(far.size) % 2, 1e200, 1e-200)
    x = rng.standard_normal((rows, size)) * scale[:, None]
    eps = rng.permutation(np.logspace(-6, 2, rows))
    dy = rng.standard_normal((rows, size))
    parameters = [rng.standard_normal((rows, size)) for _ in layer.definition.parameters]
    picked = [0, step - 1, step, 2 * step, rows - 1, *far, *rng.choice(rows, 30, replace=False)]
    assert {r // step for r in picked} == {0, 1, 2}
    for name, vectors in (("forward", []), ("vjp", [dy])):

        def function(*args, name=name):
            value = getattr(layer, name)(*args)
            return value[0] if isinstance(value, tuple) else value  # an affine layer's vjp: (dx, dgain, dbias)

        together = function(x, eps, *vectors, *parameters)
        alone = np.array([function(x[r], eps[r], *(v[r] for v in [*vectors, *parameters])) for r in picked])
        assert_agree(together[picked], alone, rtol=1e-15, what=f"{key}.{name} in blocks vs row by row")


@pytest.mark.parametrize(
    ("key", "names"), [("layernorm_affine", ("vjp", "dgain", "dbias")), ("rmsnorm_affine", ("vjp", "dgain"))]
)
def test_a_fused_program_keeps_each_result_per_row_unless_asked_for_its_sum(key, names, numpy_backend):
    """`kernel.fused` with several results: each one kept is every row's own (a row's vjp alone
    gives it), and one of the last ``summed`` is the sum of those rows over the rows."""
    layer = facade(key)
    rows, size = 5, 6
    rng = np.random.default_rng(13)
    x, dy = rng.standard_normal((2, rows, size))
    eps = np.full((rows, 1), 0.05)
    parameters = [rng.standard_normal((rows, size)) for _ in layer.definition.parameters]
    program = layer._c.fused_products(names)

    def safe(index):
        raise AssertionError(f"rows {index} left the fused program")

    def run(summed):
        return _kernel.fused(layer, program, x, eps, [dy], parameters, np.dtype(np.float64), safe, summed=summed)

    kept, summed = run(0), run(len(names) - 1)
    assert [value.shape for value in kept] == [(rows, size)] * len(names)
    alone = [layer.vjp(x[r], eps[r, 0], dy[r], *(p[r] for p in parameters)) for r in range(rows)]
    for m, name in enumerate(names):
        assert_agree(kept[m], np.array([row[m] for row in alone]), rtol=1e-13, what=f"{key}: {name} kept per row")
    np.testing.assert_array_equal(summed[0], kept[0])
    for m in range(1, len(names)):
        assert summed[m].shape == (1, size)
        assert_agree(summed[m][0], kept[m].sum(axis=0), rtol=1e-13, what=f"{key}: {names[m]} summed")


@pytest.mark.parametrize("extra", [0, 5])
def test_a_row_as_long_as_a_block_or_longer_is_one_block_of_its_own(extra, numpy_backend):
    """A row of FUSED_BLOCK entries or more: each block holds one row (never none), and the output
    is LayerNorm's: mean 0 and mean square q / (q + epsilon) in every row."""
    size = _kernel.FUSED_BLOCK + extra
    x = np.random.default_rng(5).standard_normal((3, size)) * np.array([[1.0], [1e-3], [30.0]])
    eps = 1e-2
    y = facade("layernorm").forward(x, eps)
    q = np.var(x, axis=-1)
    np.testing.assert_allclose(np.mean(y, axis=-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.mean(y * y, axis=-1), q / (q + eps), rtol=1e-12)


# --- the agreement tolerance ---------------------------------------------------


def test_a_non_finite_value_is_refused_showing_the_first_four_entries_of_each_side():
    actual = np.array([1.0, np.nan, 3.0, 4.0, 5.0])
    expected = np.arange(5.0)
    with pytest.raises(AgreementError) as refused:
        assert_agree(actual, expected, rtol=1e-12, what="forward")
    assert str(refused.value) == "forward: non-finite values (actual [ 1. nan  3.  4.], expected [0. 1. 2. 3.])"


@pytest.mark.parametrize(
    ("actual", "expected", "rtol", "atol"),
    [(1 + 1e-9, 1.0, 1e-12, 0.0), (1e-300 * (1 + 1e-9), 1e-300, 1e-13, 0.0), (1e-9, 0.0, 0.0, 1e-10)],
)
def test_an_error_just_beyond_the_tolerance_is_refused(actual, expected, rtol, atol):
    with pytest.raises(AgreementError, match="what"):
        assert_agree(np.array([1.0, actual]), np.array([1.0, expected]), rtol=rtol, atol=atol, what="what")
    assert assert_agree(expected, expected, rtol=0.0, what="same") == 1


def test_a_relative_error_of_1e_9_in_a_lambdified_function_stops_the_figures(tmp_path, monkeypatch):
    """The verification must see an error a millionth of what a loosened tolerance would let through."""
    layer = facade("layernorm")
    exact_response = layer.response
    monkeypatch.setattr(layer, "response", lambda t, e: exact_response(t, e) * (1 + 1e-9))
    with pytest.raises(AgreementError, match="response vs symbolic"):
        verify.run()
    assert figures_command.main(["--out", str(tmp_path), "--no-cache"]) == 1
    assert list(tmp_path.iterdir()) == []


# --- what verify.run checked -------------------------------------------------


def test_run_reports_values_compared_by_every_check():
    counts = verify.run()
    assert list(counts) == list(verify.CHECKS)
    # Every symmetric layer has a slope, compared with differences at 41 points for each of 5 epsilons.
    assert counts["derivatives in t vs central differences"] >= 41 * 5 * len(verify.symmetric_layers())
    assert all(count > 0 for count in counts.values()), counts


def test_run_refuses_a_slope_that_is_not_the_derivative_of_the_response(monkeypatch):
    """A slope consistent with a wrong derivation: only the differences of the response can tell."""
    layer = facade("layernorm")
    monkeypatch.setattr(verify, "scalar_against_symbolic", lambda *args: 1)
    exact_slope = layer.slope
    monkeypatch.setattr(layer, "slope", lambda t, e: exact_slope(t, e) * (1 + 1e-5))
    with pytest.raises(AgreementError, match="slope vs differences of response"):
        verify.run()


# --- a proof is exact ----------------------------------------------------------


@pytest.mark.parametrize("tiny", [sp.Rational(1, 10**12), sp.Float(1e-12), epsilon * sp.Rational(1, 10**15)])
def test_a_stated_form_off_by_a_tiny_amount_is_refused(tiny):
    layer = LAYERS["layernorm"]
    stated = layer.stated["slope_at_zero"] + tiny
    wrong = dataclasses.replace(layer, stated={**layer.stated, "slope_at_zero": stated})
    with pytest.raises(DerivationError, match="slope_at_zero"):
        quantities.formulas(wrong)


# --- the numeric re-check of a counterexample ---------------------------------

NORM_ONE_OVER_S = "spectral_norm == 1/sqrt(q + epsilon)"


@pytest.mark.parametrize(
    ("text", "example", "expected"),
    [
        (
            NORM_ONE_OVER_S,
            {"x": [1.0, -1.0], "epsilon": 0.25},
            "confirmed numerically (numeric.layernorm.spectral_norm(x, epsilon); numpy.linalg.norm(J, 2)): "
            "lhs = 0.17888544, rhs = 0.89442719",
        ),
        (
            NORM_ONE_OVER_S,
            {"x": [1.0, -1.0, 0.0], "epsilon": 0.25},
            "NOT confirmed numerically (numeric.layernorm.spectral_norm(x, epsilon); numpy.linalg.norm(J, 2)): "
            "lhs = 1.0444659, rhs = 1.0444659",
        ),
        (
            "slope_at_zero <= 1/epsilon",
            {"epsilon": 4.0},
            "confirmed numerically (numeric.layernorm.slope_at_zero(epsilon)): lhs = 0.5, rhs = 0.25",
        ),
        (
            "slope_at_zero <= 1/epsilon",
            {"epsilon": 0.25},
            "NOT confirmed numerically (numeric.layernorm.slope_at_zero(epsilon)): lhs = 2, rhs = 4",
        ),
        # A counterexample without t is taken at t = 0, where the slope is 1/sqrt(epsilon).
        (
            "slope <= 1",
            {"epsilon": 0.25},
            "confirmed numerically (numeric.layernorm.slope(t, epsilon)): lhs = 2, rhs = 1",
        ),
        # A counterexample without a gain is taken with gain 1 and bias 0: J is LayerNorm's.
        (
            "layernorm_affine: norm(J, 2) <= 1",
            {"x": [1.0, -1.0, 0.5], "epsilon": 0.25},
            "confirmed numerically (numeric.layernorm_affine.jacobian): lhs = 1.0141851, rhs = 1",
        ),
        # A name takes its own value (a display name, a gain entry) or none: never another's.
        (
            "s == 1",
            {"x": [1.0, -1.0], "epsilon": 0.25},
            "confirmed numerically (NumPy arithmetic): lhs = 1.118034, rhs = 1",
        ),
        ("zzz == 1", {"x": [1.0, -1.0], "epsilon": 0.25}, "not confirmed numerically: no numeric value for zzz"),
        (
            "layernorm_affine: gamma == 3",
            {"x": [1.0, -1.0, 0.5], "epsilon": 0.25, "gamma": 3.0},
            "NOT confirmed numerically (NumPy arithmetic): lhs = 3, rhs = 3",
        ),
    ],
)
def test_the_recheck_evaluates_the_claim_with_the_numeric_functions_it_names(text, example, expected):
    layer, _, text = text.rpartition(": ")
    assert confirm(Claim(text, layer or "layernorm"), example) == expected


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("x.T @ x <= 0", "(NumPy arithmetic): lhs = 2.25, rhs = 0"),  # a row times a column: a number
        ("all(x @ x.T == 0)", "(NumPy arithmetic): lhs = [[ 1.   -1.    0.5 ]"),  # a column times a row
        ("trace(J.T) <= 0", "(numeric.layernorm.jacobian): lhs = 1.2749756, rhs = 0"),  # a matrix's transpose
    ],
)
def test_the_recheck_transposes_a_vector_into_a_row_and_a_matrix_into_its_transpose(text, shown):
    found = confirm(Claim(text, "layernorm"), {"x": [1.0, -1.0, 0.5], "epsilon": 0.25})
    assert found.startswith(f"confirmed numerically {shown}"), found


@pytest.mark.parametrize(("call", "epsilon"), [("layernorm(x, 4)", 4.0), ("layernorm(x)", 0.25)])
def test_the_recheck_applies_a_layer_at_the_epsilon_the_claim_gives_or_the_counterexamples(call, epsilon):
    x = np.array([1.0, -1.0, 0.5])
    found = confirm(Claim(f"all({call} == 0)", "layernorm"), {"x": x.tolist(), "epsilon": 0.25})
    shown = np.array2string(numeric.layernorm.forward(x, epsilon), precision=8)
    assert found == f"confirmed numerically (numeric.layernorm.forward): lhs = {shown}, rhs = 0"


@pytest.mark.parametrize("op", ["==", "<=", "<", ">=", ">"])
@pytest.mark.parametrize(("epsilon", "slope"), [(4.0, 0.5), (1.0, 1.0), (0.25, 2.0)])
def test_the_recheck_decides_every_comparison_as_python_does(op, epsilon, slope):
    """slope_at_zero = 1/sqrt(epsilon) against 1, below, at and above it: the re-check confirms a
    refutation exactly where the comparison fails (every operator; the tie tells < from <=)."""
    holds = {"==": slope == 1, "<=": slope <= 1, "<": slope < 1, ">=": slope >= 1, ">": slope > 1}[op]
    found = confirm(Claim(f"slope_at_zero {op} 1", "layernorm"), {"epsilon": epsilon})
    verdict = "NOT confirmed numerically" if holds else "confirmed numerically"
    assert found == f"{verdict} (numeric.layernorm.slope_at_zero(epsilon)): lhs = {slope:.8g}, rhs = 1"


@pytest.mark.parametrize(
    ("layer", "second"),
    [("layernorm", "epsilon"), ("layernorm_affine", "epsilon"), ("rmsnorm", "epsilon"), ("dyt", "alpha")],
)
@pytest.mark.parametrize("product", ["vjp", "jvp", "hvp"])
def test_the_recheck_evaluates_a_backward_product_at_the_counterexamples_vectors(layer, second, product):
    """vjp, jvp and hvp are evaluated at x with the counterexample's g and v (and gain), and agree with
    J^T g, J v and the central difference of J(x + h v)^T g built from the numeric Jacobian."""
    rng = np.random.default_rng(5)
    x, g, v = (rng.normal(size=4) for _ in range(3))
    example = {"x": x.tolist(), "g": g.tolist(), "v": v.tolist(), second: 0.3, "gamma_max": 1.5, "gamma": -1.5}
    named = ", ".join([second, *{"vjp": ["g"], "jvp": ["v"], "hvp": ["g", "v"]}[product]])
    found = confirm(Claim(f"norm({product}) <= 1", layer), example)
    shown = re.fullmatch(
        rf"(NOT )?confirmed numerically \(numeric\.{layer}\.{product}\(x, {named}\)\): lhs = (\S+), rhs = 1", found
    )
    assert shown is not None, found
    gain = [np.full(4, 1.5)] if layer in ("layernorm_affine", "dyt") else []
    if gain:
        gain[0][LAYERS[layer].patterns[0].coordinate] = -1.5

    def jacobian(at):
        return getattr(numeric, layer).jacobian(at, 0.3, *gain)

    h = 1e-6
    expected = {
        "vjp": jacobian(x).T @ g,
        "jvp": jacobian(x) @ v,
        "hvp": (jacobian(x + h * v).T @ g - jacobian(x - h * v).T @ g) / (2 * h),
    }[product]
    assert float(shown.group(2)) == pytest.approx(np.linalg.norm(expected), rel=1e-6 if product == "hvp" else 1e-7)
    assert (shown.group(1) is None) == (np.linalg.norm(expected) > 1)


def test_a_refutation_names_the_numeric_functions_of_its_recheck():
    verdict = check(Claim(NORM_ONE_OVER_S), confirm)
    assert verdict.verdict == "refuted"
    assert "; confirmed numerically (numeric.layernorm.spectral_norm(x, epsilon); numpy.linalg.norm(J, 2))" in (
        verdict.detail
    )


# --- the claim whitelist -------------------------------------------------------


class _Hung(Exception):
    pass


@contextmanager
def _within(seconds: float) -> Iterator[None]:
    """A hang detector: the block is interrupted after ``seconds``."""

    def alarm(signum, frame):
        raise _Hung

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("log(t) <= t", "log"),
        ("factorial(10**7) == 1", "factorial"),
        ("sin(t) <= 1", "sin"),
        ("gamma(epsilon) == 1", "gamma"),
        ("Integral(t, t) == 1", "Integral"),
        ("sympify(t) == t", "sympify"),
        ("Function(t) == t", "Function"),
        ("sqrt(t) == Abs(t)", "Abs"),
    ],
)
def test_a_call_outside_the_whitelist_is_an_error_naming_it(text, name):
    with _within(10):
        verdict = check(Claim(text))
    assert verdict.verdict == "error"
    assert f"unknown function {name!r} at column" in verdict.detail
    assert "known functions: abs, all, batchnorm_train, det, diag, diff, dot, dyt, eigenvalues, exp" in verdict.detail


# --- a failed save keeps the old file -----------------------------------------


def _fails_halfway(file):
    file.write(b"half a PNG")
    raise OSError(28, os.strerror(28))


def _writes(content):
    return lambda file: file.write(content)


@pytest.mark.parametrize(
    "writers",
    [
        {"a.png": _fails_halfway},
        {"a.png": _writes(b"new a"), "b.png": _fails_halfway},
        {"b.png": _fails_halfway, "a.png": _writes(b"new a")},
    ],
    ids=["one file", "the second of two", "the first of two"],
)
def test_a_failed_save_leaves_the_old_files_byte_for_byte(tmp_path, writers):
    old = {"a.png": b"old a\x00\xff", "b.png": b"old b"}
    for name, content in old.items():
        (tmp_path / name).write_bytes(content)
    with pytest.raises(OSError, match="No space left"):
        write_all({tmp_path / name: write for name, write in writers.items()})
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == old


@pytest.mark.parametrize("failing", [2, 3])
def test_a_save_that_fails_after_some_files_replaced_puts_every_old_one_back(tmp_path, monkeypatch, failing):
    """The second (or third) file's rename fails after the first is in place: every file is its
    old self again, a file that did not exist is gone, and no temporary is left."""
    import figures._output as output

    old = {"a.png": b"old a", "b.png": b"old b"}
    for name, content in old.items():
        (tmp_path / name).write_bytes(content)
    real, calls = os.replace, []

    def replace(source, target):
        calls.append(target)
        if len(calls) == failing:
            raise OSError(28, "No space left on device")
        return real(source, target)

    monkeypatch.setattr(output.os, "replace", replace)
    names = ["a.png", "b.png", "c.png"]
    with pytest.raises(OSError, match="No space left"):
        write_all({tmp_path / name: _writes(f"new {name}".encode()) for name in names})
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == old


# --- survivors of make mutation's sample --------------------------------------

_RADICAND = 2 * x[0] ** 2 + 2 * x[1] ** 2 + epsilon
_T = sp.Symbol("t", real=True)


@pytest.mark.parametrize("family", ["epsilon", "nonnegative", "real"])
def test_the_sampled_values_are_log_spaced_from_1e_minus_300_to_1e300(family):
    """docs/claims.md: epsilon and the statistics log-spaced from 1e-300 to 1e300; no magnitude
    near 1 is skipped (a gap of over four decades within 1e-12 .. 1e12 is one)."""
    values = sampling.GRIDS[family]
    logs = [sp.log(abs(v), 10) for v in values if v != 0]
    powers = sorted({int(p) for p in logs if p.is_integer and abs(p) >= 2})  # beyond the nicest values
    assert (powers[0], powers[-1]) == (-300, 300)
    assert powers == sorted(-p for p in powers)  # as many magnitudes below 1 as above
    gaps = [(b - a, a) for a, b in itertools.pairwise(powers)]
    assert all(gap <= 4 for gap, start in gaps if -12 <= start < 12), gaps
    below = [gap for gap, start in gaps if start + gap < 0]
    assert below == sorted(below, reverse=True), gaps  # finer nearer 1
    if family == "real":  # each magnitude on both sides of 0
        assert all(-sign * sp.Integer(10) ** p in values for p in powers for sign in (1, -1))


def test_a_nonnegative_epsilon_is_sampled_at_zero_and_at_every_positive_value():
    """epsilon >= 0 (a domain that keeps epsilon = 0): the sampler tries every value of the
    positive grid once, in its order (the nicest first), and 0 right after the first."""
    values = sampling.grid(sp.Symbol("epsilon", nonnegative=True))
    positive = sampling.GRIDS["epsilon"]
    assert values == (positive[0], 0, *positive[1:])
    assert 0 not in positive


def test_the_feature_counts_sampled_are_every_n_up_to_5_then_8_64_and_768():
    """docs/claims.md: a claim over n is sampled at n = 2, 3, 4, 5, 8, 64 and 768, each once and
    smallest first, so that a claim false at one small n alone (n = 2 or n = 3) is caught."""
    from derivations.symbols import n

    assert sampling.grid(n) == tuple(map(sp.Integer, (2, 3, 4, 5, 8, 64, 768)))
    page = docs_words("claims.md")
    assert "n at 2, 3, 4, 5, 8, 64 and 768" in page


def test_a_point_where_a_condition_cannot_be_decided_is_left_out():
    """A condition still holding a free symbol has no truth value: the point is skipped, nothing raises."""
    x, free = sp.Symbol("x", real=True), sp.Symbol("free", real=True)
    assert list(sampling.points([x], [sp.Lt(x, free)])) == []
    assert next(sampling.points([x], [sp.Lt(x, x + 1)])) == {x: sampling.grid(x)[0]}


@pytest.mark.parametrize(
    ("size", "first"), [(2, (-1, 0)), (3, (-1, 0, 1)), (4, (-2, -1, 0, 1)), (5, (-2, -1, 0, 1, 2))]
)
def test_the_first_explicit_input_of_each_size_is_small_integers_about_zero(size, first):
    inputs = sampling.explicit_inputs([size], set())
    assert [next(inputs).x for _ in range(3)] == [first, (1,) * size, (0,) * size]


def test_the_explicit_inputs_vectors_are_tenths_from_minus_to_plus_9_9_and_random_x_hundredths():
    """explicit_inputs: g, v, the gain and the bias of every input are tenths in [-9.9, 9.9], both
    ends reached and nothing beyond (the gain 0 at the constant input); x, after the small
    integers, the constant and zero, is its scale (1, then 1e-300 .. 1e300) times hundredths in
    [-9.99, 9.99]."""
    sizes = list(range(2, 12))
    drawn = list(sampling.explicit_inputs(sizes, {"g", "v", "gamma", "beta"}, seed=3))
    scales = (1, *sampling._LOG)
    assert len(drawn) == len(sizes) * (len(scales) + 3)
    tenth, hundredth = sp.Rational(1, 10), sp.Rational(1, 100)
    for field in ("g", "v", "gain", "bias"):
        values = [
            e
            for m, inputs in enumerate(drawn)
            for e in getattr(inputs, field)
            if field != "gain" or m // len(sizes) != 1
        ]
        assert all((e / tenth).is_integer for e in values), field
        assert (min(values), max(values)) == (-99 * tenth, 99 * tenth), field
    assert {e for inputs in drawn[len(sizes) : 2 * len(sizes)] for e in inputs.gain} == {0}
    for m, inputs in enumerate(drawn[3 * len(sizes) :]):
        scale = scales[m // len(sizes)]
        assert all((e / scale / hundredth).is_integer and abs(e / scale) <= 999 * hundredth for e in inputs.x)


def _entry_alone(expr, point, inputs):
    """One entry the plain way, as a reference: sums, deltas and largest values taken, then
    the point, then the input's entries, each in its own pass."""
    expr = expr.replace(
        lambda e: isinstance(e, PowerSum), lambda e: inputs.power_sum(e.args[0], sampling._index(e.args[0]))
    )
    expr = expr.replace(lambda e: isinstance(e, sp.KroneckerDelta), lambda e: sp.KroneckerDelta(*e.args))
    expr = expr.replace(
        lambda e: isinstance(e, Largest), lambda e: sp.Max(*(e.args[0].xreplace({k: m}) for m in range(inputs.size)))
    )
    return expr.xreplace(dict(point)).xreplace(inputs.entries())


def _same_value(a, b):
    """Equal as written, or as finite numbers to 40 digits, or (a parameter left symbolic) as expressions."""
    if a == b:
        return True
    if a.is_number and b.is_number:
        return bool(
            a.is_finite and b.is_finite and abs(sp.N(a - b, 60)) <= sp.Float(10) ** -40 * max(1, abs(sp.N(a, 60)))
        )
    return sp.simplify(a - b) == 0


@pytest.mark.parametrize(
    ("layer", "text"),
    [
        ("layernorm_affine", "J @ J == J"),
        ("prmsnorm", "J @ x == J.T @ g"),
        ("dyt", "J == J.T"),
        ("l2norm_clamped", "J.T @ g == J @ v"),
    ],
)
def test_each_entry_of_an_explicit_vector_or_matrix_is_the_entry_evaluated_alone(layer, text):
    """The sums and the point are put into a vector's or a matrix's entry once for all its
    entries; every entry must still be what evaluating it alone, indices first, gives."""
    claim = Claim(text, layer)
    domain, sides = checker.read_claim(claim)
    compared = 0
    for point, inputs in itertools.islice(checker._points(domain, sides, claim), 3):
        for side in (sides.lhs, sides.rhs):
            got = sampling.at(side, point, inputs, domain.usage.matrices)
            if isinstance(side, Vector):
                want = [_entry_alone(side.entry.xreplace({i: r}), point, inputs) for r in range(inputs.size)]
            else:
                want = [
                    [_entry_alone(side.entry.xreplace({i: r, k: c}), point, inputs) for c in range(inputs.size)]
                    for r in range(inputs.size)
                ]
            for a, b in zip(sampling._flat(got), sampling._flat(want), strict=True):
                assert _same_value(a, b), (point, inputs, a, b)
                compared += a.is_number
    assert compared >= 3 * 2 * 2


def test_a_largest_value_ranges_over_every_entry_whatever_the_row_and_column():
    """max_k |x_k x_i| + x_k as a matrix entry (i, k): the max's k is its own, bound; the column k is
    another.  Written with the same letter, the column must not be put into the max."""
    inputs = sampling.Explicit(tuple(map(sp.Integer, (3, -5, 2))))
    matrix = semantics.Matrix(Largest(sp.Abs(x[k] * x[i])) + x[k])
    largest = [max(abs(a * b) for b in inputs.x) for a in inputs.x]
    assert sampling.at(matrix, {}, inputs) == [[largest[r] + c for c in inputs.x] for r in range(3)]
    vector = semantics.Vector(Largest(sp.Abs(x[k] * x[i])))
    assert sampling.at(vector, {}, inputs) == largest


_HUGE = sp.Rational(917, 100) * sp.Integer(10) ** 300
_ENTRIES = [
    # sech at huge arguments: tiny values, each far from the others (the case that was slow).
    (2 * sp.sech(_HUGE) ** 2, sp.sech(_HUGE / 3) ** 2 / 2, 3 * sp.sech(_HUGE + 1) ** 2),
    # Rationals, negatives, a repeated largest entry, and zero.
    (sp.Rational(-1, 3), sp.Rational(1, 7), sp.Rational(1, 7), sp.Integer(0)),
    (sp.Integer(-2), sp.Rational(-5, 2)),
    # Equal values written differently: a near tie at any precision, left to SymPy's Max.
    ((1 + sp.sqrt(2)) ** 2, 3 + 2 * sp.sqrt(2), sp.Integer(2)),
    # Apart by 1e-40, below the 30 digits of the first evaluation.
    (sp.pi, sp.pi + sp.Rational(1, 10**40), sp.E),
    (sp.sqrt(2) - 1, 1 / (sp.sqrt(2) + 1) - sp.Rational(1, 10**35)),
]


@pytest.mark.parametrize("entries", _ENTRIES, ids=range(len(_ENTRIES)))
def test_the_largest_entry_at_numbers_is_sympys_max(entries):
    """At numbers, LargestEntry is the largest entry exactly (compared to SymPy's own Max at 100
    digits, whatever order the entries come in); with a symbol, it stays unevaluated."""
    want = sp.Max(*entries)
    for order in itertools.permutations(entries):
        got = sampling.LargestEntry(*order)
        assert not isinstance(got, sp.Max) or set(got.args) <= set(entries)
        assert sp.N(got - want, 100, maxn=10**4) == 0 or got == want, (order, got, want)
    held = sampling.LargestEntry(epsilon, *entries)
    assert isinstance(held, sampling.LargestEntry)
    assert held.xreplace({epsilon: sp.Integer(10**6)}) == sp.Integer(10**6)


@pytest.mark.parametrize("entries", [(sp.I, sp.Integer(1)), (1 + sp.I, sp.sqrt(2)), (sp.pi, sp.sqrt(-2))])
def test_entries_not_all_real_are_refused_as_sympys_max_refuses_them(entries):
    """A complex entry has no place in an order: LargestEntry says so in SymPy's Max's words
    (a ValueError), in either order, never by comparing it as if it were real."""
    for order in (entries, entries[::-1]):
        with pytest.raises(ValueError, match="is not comparable"):
            sp.Max(*order)
        with pytest.raises(ValueError, match="is not comparable"):
            sampling.LargestEntry(*order)


def test_entries_apart_by_more_than_30_digits_resolve_are_not_compared_by_sympy(monkeypatch):
    monkeypatch.setattr(sp, "Max", None)  # any pairwise comparison by SymPy's Max would fail here
    for entries in (_ENTRIES[0], (*_ENTRIES[0], sp.pi / 10**300), (sp.pi, sp.pi * (1 + sp.Rational(1, 10**21)))):
        largest = max(entries, key=lambda entry: sp.N(entry, 60))
        for order in itertools.permutations(entries):
            assert sampling.LargestEntry(*order) == largest


@pytest.mark.parametrize(
    ("text", "allowed"),
    [
        # ||J||_oo of a diagonal J is max_k |J_kk|, the spectral norm: true, and no entry of J is
        # to be put into the max (it was refuted, J_cc |J_cc| shown for max_k |J_kk| J_cc).
        ("spectral_norm * J == norm(J, oo) * J", {"proved", "supported"}),
        # A product's sum over k is not the max's k.
        ("(spectral_norm * J) @ x == spectral_norm * (J @ x)", {"proved", "supported"}),
        ("sum((spectral_norm * J) @ ones) == spectral_norm * sum(J @ ones)", {"proved", "supported"}),
    ],
)
def test_a_largest_value_beside_a_matrix_is_not_captured_by_its_indices(text, allowed):
    verdict = check(Claim(text, "dyt"))  # no numeric re-check: the verdict must be right without it
    assert verdict.verdict in allowed, verdict.detail


def test_a_refutation_next_to_a_largest_value_shows_each_side_at_its_counterexample():
    """J @ J == spectral_norm * J is false; both sides shown are recomputed here from the counterexample."""
    verdict = check(Claim("J @ J == spectral_norm * J", "dyt"), confirm)
    assert verdict.verdict == "refuted", verdict.detail
    example = verdict.counterexample
    assert "k" not in example  # the column index is no parameter of the counterexample
    x0, alpha = np.array(example["x"]), float(example["alpha"])
    gain = np.array(example["gain"])
    diagonal = alpha * gain / np.cosh(alpha * x0) ** 2  # J of gamma tanh(alpha x) + beta
    lhs, rhs = np.diag(diagonal**2), np.abs(diagonal).max() * np.diag(diagonal)
    assert not np.allclose(lhs, rhs)
    shown = verdict.detail.split("lhs = ", 1)[1].split("; confirmed", 1)[0]
    shown_lhs, shown_rhs = (np.array(eval_free_matrix(part)) for part in shown.split(", rhs = "))
    np.testing.assert_allclose(shown_lhs, lhs, rtol=1e-6)
    np.testing.assert_allclose(shown_rhs, rhs, rtol=1e-6)


def _spectral_norm_by_differences(layer, x0, eps):
    """||J||_2 at x0 from central differences of the forward map, not from the derived J."""
    function = facade(layer)
    h = 1e-7 * max(1.0, float(np.abs(x0).max()))
    columns = [
        (function.forward(x0 + h * e, eps) - function.forward(x0 - h * e, eps)) / (2 * h) for e in np.eye(x0.size)
    ]
    return np.linalg.norm(np.stack(columns, axis=1), 2)


@pytest.mark.parametrize(
    ("layer", "claim", "size"),
    [
        ("layernorm", "norm(J, 2) == 1/s", 2),  # from n = 3 only: at n = 2 it is epsilon/s**3
        ("l2norm_clamped", "norm(J, 2) <= 1/sqrt(epsilon)", 3),  # 1/epsilon inside the clamp
    ],
)
def test_a_counterexample_under_a_fixed_n_has_n_entries(layer, claim, size):
    """With n fixed by an assumption the shown input has n entries (it had 4), and the refutation,
    recomputed here from it, holds."""
    verdict = check(Claim(claim, layer, (f"n == {size}",)), confirm)
    assert verdict.verdict == "refuted", verdict.detail
    example = verdict.counterexample
    x0, eps = np.array(example["x"]), float(example["epsilon"])
    assert x0.size == example["n"] == size
    norm = _spectral_norm_by_differences(layer, x0, eps)
    if layer == "layernorm":
        assert not np.isclose(norm, 1 / np.sqrt(np.mean((x0 - x0.mean()) ** 2) + eps), rtol=1e-5)
    else:
        assert norm > 1 / np.sqrt(eps) * (1 + 1e-5)


def test_layernorm_s_spectral_norm_is_one_over_s_from_n_3():
    verdict = check(Claim("norm(J, 2) == 1/s", "layernorm", ("n == 3",)), confirm)
    assert verdict.verdict in ("proved", "supported"), verdict.detail


@pytest.mark.parametrize(
    ("layer", "claim", "quantified", "expected"),
    [
        # epsilon is only inside the norms: it is sampled all the same (it was never, and no point was admissible).
        ("layernorm_affine", "norm(J, oo) >= norm(J, 2) / sqrt(n)", "epsilon > 0", "supported"),
        # A point SymPy cannot evaluate exactly (an overflow inside a huge power) is skipped, not the claim;
        # now proved from |J v| <= ||J||_2 |v| before any point is sampled.
        ("rmsnorm", "norm(J @ v, 2) <= spectral_norm * norm(v, 2)", "v in R^n", "proved"),
    ],
)
def test_true_norm_inequalities_are_supported_not_left_undecided(layer, claim, quantified, expected):
    verdict = check(Claim(claim, layer))
    assert verdict.verdict == expected, verdict.detail
    assert quantified in verdict.quantifier


@pytest.mark.parametrize(
    ("layer", "claim", "assumptions", "allowed"),
    [
        # What an assumption fixes is fixed inside a held matrix too (it was sampled there apart).
        # Where two cases take one path, the second (the slower) is in the slow tier.
        ("dyt", "norm(J, oo) <= gamma_max", ("alpha == 1",), {"proved", "supported"}),
        slow(("dyt", "norm(J, oo) == spectral_norm", ("alpha == 1",), {"proved", "supported"})),
        # norm(J, 2) of a symmetric J is its spectral norm, a largest value: renamed apart as well.
        ("dyt", "(norm(J, 2) * J) @ x == norm(J, 2) * (J @ x)", (), {"proved", "supported"}),
        slow(("dyt", "(norm(J, 2) * J).T == norm(J, 2) * J", (), {"proved", "supported"})),
        ("dyt", "spectral_norm == norm(J, 2)", (), {"proved"}),
        # The pattern's quantities are at its 3-entry input: n == 17 leaves none (it was refuted at n = 3),
        # so the claim is vacuous.
        ("layernorm", "n + 0*slope_at_zero + 0*spectral_norm == 17", ("n == 17",), {"vacuous"}),
        ("layernorm", "response <= 1", ("n == 17",), {"vacuous"}),
        ("layernorm", "response <= 1", ("n >= 4",), {"vacuous"}),
        # gamma_max fixed by an assumption bounds the sampled gains too (they were sampled past it).
        ("dyt", "spectral_norm <= abs(alpha)", ("gamma_max == 1",), {"proved", "supported"}),
        slow(("rmsnorm_affine", "norm(J, 2) <= 1/sqrt(epsilon)", ("gamma_max == 1",), {"proved", "supported"})),
        slow(("layernorm_affine", "slope_at_zero <= 1/sqrt(epsilon)", ("gamma_max == 1",), {"proved", "supported"})),
        # A statistic fixed where only the pattern's quantities (functions of t) are named: a condition on t
        # (never sampled apart): q = 2 t^2 / 3 = 1 at t = +-sqrt(3/2), where the response is +-sqrt(3)/2.
        ("layernorm", "response <= 1", ("q == 1", "epsilon == 1"), {"proved"}),
    ],
)
def test_assumptions_and_largest_values_never_give_a_wrong_verdict(layer, claim, assumptions, allowed):
    verdict = check(Claim(claim, layer, assumptions))  # without the numeric re-check
    assert verdict.verdict in allowed, verdict.detail


def test_a_refutation_under_a_fixed_epsilon_is_at_that_epsilon():
    """||J||_2 <= 1 for partial RMSNorm at epsilon = 1 is false (1.03 at x = 1, n = 5, k = 1); the
    counterexample is at epsilon = 1, and recomputed here by central differences."""
    verdict = check(Claim("norm(J, 2) <= 1", "prmsnorm", ("epsilon == 1",)), confirm)
    assert verdict.verdict == "refuted", verdict.detail
    example = verdict.counterexample
    assert example["epsilon"] == 1
    assert _spectral_norm_by_differences("prmsnorm", np.array(example["x"]), 1.0) > 1 + 1e-6


def eval_free_matrix(text):
    """[[a, b], [c, d]] as printed, read as numbers without eval."""
    rows = text.strip().removeprefix("[[").removesuffix("]]").split("], [")
    return [[float(value) for value in row.split(", ")] for row in rows]


def test_a_matrix_norm_of_entries_that_cancel_past_the_digits_asked_is_no_violation():
    """||J J||_oo <= ||J||_oo**2 holds for every J.  At x ~ 1e200, epsilon = 1/100, each entry of
    layernorm_std_eps's J is a difference that cancels some 400 digits: evaluated at a fixed 270,
    the entries were noise and the claim was refuted (found by a hostile review).  An entry is now
    evaluated until it has its digits, or the point is not decided."""
    claim = Claim("norm(J @ J, oo) <= norm(J, oo)**2", "layernorm_std_eps", ("epsilon == 1/100",))
    verdict = check(claim)  # without the numeric re-check, which refused the refutation
    assert verdict.verdict in {"proved", "supported"}, verdict.detail


def test_a_matrix_norm_at_a_tie_with_its_bound_is_no_violation():
    """At n = 2 the bound is attained; the explicit norm must be computed past the 240 digits a
    decision uses.  The bound is now proved from ||diag(gamma) J||_2 <= gamma_max ||J||_2 first; its
    audit still takes the explicit norms at the tie."""
    verdict = check(Claim("norm(J, 2) <= gamma_max/s", "rmsnorm_affine"))
    assert verdict.verdict == "proved", verdict.detail


@pytest.mark.parametrize(
    ("general", "direct", "equal"),
    [
        (sp.sqrt(2 * _RADICAND), sp.sqrt(2) * sp.sqrt(_RADICAND), True),
        (1 / sp.sqrt(2 * _RADICAND), sp.sqrt(2) / (2 * sp.sqrt(_RADICAND)), True),
        (sp.sqrt(2 * _RADICAND), sp.sqrt(_RADICAND), False),
    ],
)
def test_an_explicit_proof_sees_one_root_under_two_constant_factors(general, direct, equal):
    """sqrt(2 r) and sqrt(2) sqrt(r) are one root, as the symbolic-n and explicit forms write it."""
    pairs = [(general, direct, "entry")]
    if equal:
        jacobian.explicit_equal(LAYERS["rmsnorm"], 2, pairs)
    else:
        with pytest.raises(DerivationError, match=r"rmsnorm\.entry at n = 2"):
            jacobian.explicit_equal(LAYERS["rmsnorm"], 2, pairs)


@pytest.mark.parametrize(("op", "holds"), [("<=", True), ("<", True), (">", False), ("==", False)])
def test_a_clear_separation_is_decided_at_fixed_precision(op, holds, monkeypatch):
    """sqrt(t**2 + epsilon) against t + 1 at t = 1, epsilon = 1/4: 1.118 against 2, no tie to break."""
    monkeypatch.setattr(sampling, "exact_tie", lambda *args: pytest.fail("a clear separation went to exact_tie"))
    sides = sampling.Compiled(sp.sqrt(_T**2 + epsilon), _T + 1, [_T, epsilon])
    assert sides.decide(op, {_T: sp.Integer(1), epsilon: sp.Rational(1, 4)}) is holds


@pytest.mark.parametrize(
    ("lhs", "op", "rhs", "holds"),
    [(_T, "<=", sp.oo * _T, True), (_T, ">", sp.oo * _T, False), (-sp.oo * _T, "<", _T, True)],
)
def test_a_side_infinite_at_a_point_is_decided_against_a_finite_one(lhs, op, rhs, holds):
    """Only two equal infinities are undecided: a finite side against an infinite one is decided."""
    assert sampling.Compiled(lhs, rhs, [_T]).decide(op, {_T: sp.Integer(1)}) is holds


@pytest.mark.parametrize("power", [2, 3, 4, 8, -8, sp.Rational(7, 2), sp.Rational(-7, 2)])
def test_small_powers_are_emitted_as_products(power):
    """Up to the eighth (half-)power, the emitted code multiplies: numpy.power is several times slower."""
    source = inspect.getsource(compile(_T**power + epsilon, [_T, epsilon]))
    assert "**" not in source, source
    assert "power" not in source, source
    assert compile(_T**power, [_T])(1.5) == pytest.approx(1.5 ** float(power), rel=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_accuracy_grids_random_magnitudes_span_the_floating_point_range(dtype):
    """The scalar grid's 200 random t: of either sign, about equally, and of magnitudes across the
    normal range (within a tenth of it at each end)."""
    ts, _ = accuracy.scalar_grid(dtype)
    signs = np.sign(ts[-200:])  # after 0 and the powers of ten: both signs, about half each
    assert set(signs) == {-1.0, 1.0}
    assert 60 < np.count_nonzero(signs > 0) < 140
    spread = np.log10(np.abs(ts[-200:]).astype(np.float64))
    powers = accuracy.exponents(dtype, 10)  # the normal range, as the grid's powers of ten span it
    low, high = powers[0], powers[-1]
    assert spread.min() < low + (high - low) / 10
    assert spread.max() > high - (high - low) / 10


@pytest.mark.parametrize("size", [10**20, 10**40])
@pytest.mark.parametrize(("op", "holds"), [("<=", False), ("==", False), (">", True)])
def test_a_near_tie_is_decided_only_at_enough_digits(size, op, holds):
    """sqrt(t**2 + epsilon) exceeds t by epsilon / (2 t): at t = 1e40, one part in 1e80, which 60 digits round away."""
    sides = sampling.Compiled(sp.sqrt(_T**2 + epsilon), _T, [_T, epsilon])
    assert sides.decide(op, {_T: sp.Integer(size), epsilon: sp.Integer(1)}) is holds


def test_a_check_past_its_memory_budget_names_the_budget_in_mib():
    with pytest.raises(bounded.Exceeded, match=r"^undecided within 64 MiB of memory$"):
        bounded.run(lambda: bytearray(1 << 30), 60, memory=64 << 20)


def test_a_save_never_writes_through_a_file_already_at_its_temporary_name(tmp_path, monkeypatch):
    """A link planted where the temporary will be is refused, and what it points to is left alone."""
    monkeypatch.setattr(secrets, "token_hex", lambda size: "0" * 2 * size)
    victim = tmp_path / "victim"
    victim.write_bytes(b"victim")
    (tmp_path / f".partial-{os.getpid()}-00000000-a.png").symlink_to(victim)
    with pytest.raises(FileExistsError):
        write_all({tmp_path / "a.png": _writes(b"new a")})
    assert victim.read_bytes() == b"victim"


@pytest.mark.parametrize("key", ["layernorm", "rmsnorm"])
def test_forward_at_the_largest_float64_inputs_is_finite(key):
    big = np.finfo(np.float64).max
    out = facade(key).forward(np.array([big, -big, 0.0]), 1e-5)
    # Mean 0 and mean square 2 big**2 / 3: big / sqrt(2 big**2 / 3) = sqrt(3/2), epsilon negligible.
    assert_agree(out, np.sqrt(1.5) * np.array([1.0, -1.0, 0.0]), rtol=1e-14, what=f"{key}.forward at +-max float64")


@pytest.mark.parametrize(("terms", "nodes"), [(["-t", *["t"] * 73], 300), (["2", *["t"] * 74], 301)])
def test_a_claim_may_have_at_most_300_syntax_nodes(terms, nodes):
    words = vocabulary("layernorm")
    text = " + ".join(terms) + " == 1"
    if nodes <= 300:
        assert parse(text, words.names(), {}, words.expand).lhs.has(words.symbols["t"])
    else:
        with pytest.raises(ClaimError, match=f"^claim has {nodes} syntax nodes; at most 300 are accepted$"):
            parse(text, words.names(), {}, words.expand)


@pytest.mark.parametrize("depth", [39, 40, 41])
def test_a_claim_may_nest_brackets_at_most_40_deep(depth):
    """40 nested brackets read; the 41st is refused, at its column."""
    words = vocabulary("layernorm")
    text = "(" * depth + "t" + ")" * depth + " == t"
    if depth <= 40:
        assert parse(text, words.names(), {}, words.expand).lhs == words.symbols["t"]
    else:
        with pytest.raises(ClaimError, match=r"^brackets nested deeper than 40 at column 41$"):
            parse(text, words.names(), {}, words.expand)


def test_decide_takes_an_irrational_difference_by_its_value_not_by_another_expression():
    """sqrt(2) < 2 holds: the difference is irrational, so it is decided numerically; no other
    expression of the two sides (sqrt(2)**2 = 2, rational) may stand in for it."""
    import sympy as sp

    from derivations.claims.sampling import decide

    assert decide(sp.sqrt(2), "<", sp.Integer(2), {}) is True
    assert decide(sp.sqrt(2), ">", sp.Integer(2), {}) is False
    assert decide(sp.sqrt(3), "<=", sp.Integer(2), {}) is True


def test_a_refutation_its_numeric_recheck_does_not_confirm_is_no_verdict():
    """A counterexample stands only where an independent evaluation fails too: otherwise "error"."""
    claim = Claim("slope_at_zero == 2/sqrt(epsilon)")
    assert check(claim, confirm).verdict == "refuted"
    verdict = check(claim, lambda c, example: "NOT confirmed numerically (a stand-in): lhs = 2, rhs = 2")
    assert verdict.verdict == "error"
    assert verdict.detail.startswith("undecided: fails at")


@pytest.mark.parametrize(
    ("layer", "text"), [("prmsnorm", "norm(J, 2) >= slope"), ("dyt", "spectral_norm >= abs(slope)")]
)
def test_pattern_quantities_are_not_mixed_with_independently_sampled_inputs(layer, text):
    """True at x = (-t, 0, t) (J has eigenvalue 1/s >= slope; sech**2 is largest at 0): sampling x
    apart from t refuted them at t = 0 and x = (-1, 0, 1).  Undecided, never refuted."""
    verdict = check(Claim(text, layer), confirm)
    assert verdict.verdict == "error"
    assert "cannot be combined" in verdict.detail


@pytest.mark.parametrize("key", ["layernorm", "rmsnorm", "prmsnorm"])
def test_an_empty_batch_gives_an_empty_result(key):
    module = getattr(__import__("numeric"), key)
    empty = np.zeros((0, 3))
    assert module.forward(empty, 0.1).shape == (0, 3)
    assert module.vjp(empty, 0.1, empty).shape == (0, 3)


def test_the_bounded_child_leaves_even_where_os_exit_is_patched(tmp_path, monkeypatch):
    """The in-process command tests patch os._exit to raise SystemExit; the forked child of a
    bounded check must still leave there, not go on as a copy of the test process (it did, and
    ran the rest of the test and the tests after it, so a worker's reports came out twice or not at all)."""
    parent = os.getpid()
    marker = tmp_path / "the child went on"

    def exit_now(code):
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", exit_now)
    monkeypatch.setattr(bounded, "_reap", lambda pid: os.waitpid(pid, 0))  # the child ends by itself
    try:
        assert bounded.run(lambda: 7, 60) == 7
    finally:
        if os.getpid() != parent:  # only a child that did not leave gets here
            marker.write_text("yes")
            os.kill(os.getpid(), signal.SIGKILL)
    assert not marker.exists()


def test_the_sampler_compares_at_the_precisions_the_docs_state():
    """docs/claims.md: values compared at 30 significant digits, a small difference again at 60,
    120 and 240; SymPy's working precision up to 3000 digits."""

    text = docs_words("claims.md")
    found = re.search(r"compared at (\d+) significant digits.*? again at (\d+), (\d+) and (\d+) digits", text)
    assert found is not None
    assert tuple(int(digits) for digits in found.groups()) == sampling.DIGITS
    assert f"up to {sampling.MAXN} digits of working precision" in text


@pytest.mark.parametrize("entries", [(1, 2, 6), (-3, 0, 1, 5), (sp.Rational(1, 3), sp.Rational(-7, 2))])
@pytest.mark.parametrize("mean", [sp.Integer(5), sp.Rational(-2, 7), sp.Integer(0)])
def test_an_input_shifted_to_a_mean_has_that_mean_exactly_and_the_same_deviations(entries, mean):
    inputs = sampling.Explicit(tuple(map(sp.sympify, entries)), (), (), (), ())
    moved = sampling.shifted(inputs, mean)
    size = len(entries)
    assert sp.Add(*moved.x) / size == mean
    old_mean = sp.Add(*inputs.x) / size
    assert [a - mean for a in moved.x] == [b - old_mean for b in inputs.x]


def test_the_points_beside_successive_seeds_go_through_every_simple_combination():
    """Each seed starts the combinations of the first four values of each symbol (16 for two) a
    block of 6 further on: the first 6 points of seeds 0, 1 and 2 cover all 16 between them,
    so a few points taken beside each explicit input do not repeat the same ones."""
    t, epsilon = sp.Symbol("t", real=True), sp.Symbol("epsilon", positive=True)
    every = set(itertools.product(sampling.grid(t)[:4], sampling.grid(epsilon)[:4]))
    assert len(every) == 16
    seen = set()
    for seed in range(3):
        first = list(itertools.islice(sampling.points([t, epsilon], [], seed=seed), 6))
        assert len(first) == 6
        seen |= {(point[t], point[epsilon]) for point in first}
    assert seen == every


@pytest.mark.parametrize("value", [{1: "a"}, {"a": 1, (2,): "b"}, {"a": object()}])
def test_a_bounded_result_with_a_key_json_would_change_or_a_value_it_cannot_hold_is_refused(value):
    """JSON would turn the key 1 into "1" (and a tuple key fails): such a result is refused by
    name, never sent back changed; string keys and plain values round-trip."""
    with pytest.raises(TypeError, match="which is not plain data"):
        bounded._encode(value)
    assert bounded._encode({"n": (3, [1.5])}) == {"dict": {"n": {"tuple": [3, [1.5]]}}}
