"""Accuracy across the floating-point range, against mpmath (reduced grids; make accuracy runs the full ones)."""

import re
from pathlib import Path

import numpy as np
import pytest
from docs_text import docs_words
from grids import core_fast, slow

from derivations import LAYERS
from numeric import facade, layernorm
from numeric.checks import accuracy
from numeric.kernels import rescale as _rescale

DTYPES = (np.float64, np.float32)

# A layer derived as another (a layer applied block by block: groups, a batch) is measured
# through its base: test_the_wrapper_returns_its_base_s_values_bit_for_bit_on_the_grid shows that
# on one block it returns the base's values, so the base's measurement against mpmath is its own.
REWRAPPED = [key for key in accuracy.LAYERS if LAYERS[key].derived_as is not LAYERS[key]]


SCALAR = [(key, name) for key in accuracy.layer_keys() for name in accuracy.scalar_functions(key)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("key", "name"), SCALAR)
def test_scalar_functions_within_their_ulp_bound(key, name, dtype):
    ts, epsilons = accuracy.scalar_grid(dtype)
    result = accuracy.scalar(key, name, dtype, ts[::3], epsilons[::2])
    print(f"{result.function} {result.dtype}: worst {result.worst:.2f} ulp at {result.where}")
    assert result.points > 50
    assert result.silent == 0, f"inf, NaN or 0 where the true value is normal: {result.where}"
    assert result.worst <= result.bound, f"{result.worst:.2f} ulp at {result.where}"


VECTOR = [
    (key, name) for key in accuracy.layer_keys() if key not in REWRAPPED for name in accuracy.vector_functions(key)
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("key", "name"), core_fast(VECTOR))
def test_vector_functions_within_8n_ulp(key, name, dtype):
    small = np.dtype(dtype) == np.float32
    powers = accuracy.exponents(dtype, 20 if small else 100)
    epsilons = 10.0 ** accuracy.exponents(dtype, 30 if small else 200)
    result = accuracy.vector(key, name, dtype, powers, epsilons)
    print(f"{result.function} {result.dtype}: worst {result.worst:.2f} ulp at {result.where}")
    assert result.points > 10
    assert result.silent == 0
    assert result.worst <= result.bound, f"{result.worst:.2f} ulp at {result.where}"


@pytest.mark.parametrize("family", ["constant", "offset", "integer offset"])
@pytest.mark.parametrize(("key", "name"), core_fast(VECTOR))
def test_constant_and_offset_inputs_within_8n_ulp(key, name, family):
    # make accuracy runs the full families; here the ends of each range.
    powers = np.array([-300, 0, 300]) if family == "constant" else np.array([4, 15])
    epsilons = 10.0 ** np.array([-300, -5, 300])
    result = accuracy.vector(key, name, np.float64, powers, epsilons, family=family)
    print(f"{result.function} {result.dtype}: worst {result.worst:.2f} ulp at {result.where}")
    assert result.points > 10
    assert result.silent == 0, f"inf or NaN where the true value is finite: {result.where}"
    assert result.worst <= result.bound, f"{result.worst:.2f} ulp at {result.where}"


@pytest.mark.parametrize("dtype", [np.float32, "float64", np.dtype("float32")], ids=str)
def test_a_result_names_its_dtype_as_numpy_does_however_it_was_given(dtype):
    """The report's and the docs' tables read each row's dtype: "float32" or "float64", for a
    dtype given as NumPy's type, its name or a dtype object."""
    found = accuracy.vector("layernorm", "forward", dtype, np.array([0]), np.array([0.25]))
    assert found.dtype == np.dtype(dtype).name
    ts, epsilons = accuracy.scalar_grid(np.dtype(dtype))
    assert accuracy.scalar("layernorm", "slope", dtype, ts[:3], epsilons[:2]).dtype == np.dtype(dtype).name


def test_the_seed_failures_are_fixed():
    assert layernorm.response(1e200, 0.25) == pytest.approx(1.5**0.5, rel=4e-16)
    assert layernorm.slope(1e-200, 1e-300) == pytest.approx(1e150, rel=8e-16)
    value = layernorm.response(np.float32(1e20), np.float32(0.25))
    assert value.dtype == np.float32
    assert value == pytest.approx(1.5**0.5, rel=4e-7)
    forward = layernorm.forward(np.array([-1e20, 0.0, 1e20], dtype=np.float32), np.float32(0.25))
    assert forward[2] == pytest.approx(1.5**0.5, rel=4e-7)


def test_the_accuracy_measure_can_fail(monkeypatch):
    """A function off by a relative 1e-14 (about 45 ulp) is caught."""
    layer = accuracy.facade("layernorm")
    slope = layer.slope
    monkeypatch.setattr(layer, "slope", lambda t, e: slope(t, e) * (1 + 1e-14))
    ts, epsilons = accuracy.scalar_grid(np.float64)
    result = accuracy.scalar("layernorm", "slope", np.float64, ts[::10], epsilons[::4])
    assert not result.ok
    assert result.worst > 40


BACKWARD = [(key, name) for key in accuracy.LAYERS if key not in REWRAPPED for name in accuracy.backward_functions(key)]


def _backward_grid(dtype):
    small = np.dtype(dtype) == np.float32
    return accuracy.exponents(dtype, 20 if small else 100), 10.0 ** accuracy.exponents(dtype, 30 if small else 200)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("key", "name"), core_fast([(key, name) for key, name in BACKWARD if name != "hvp"]))
def test_first_order_products_within_8n_ulp(key, name, dtype):
    # The fused float32 path and the rescaled float64 one, against the derived product in mpmath.
    result = accuracy.vector(key, name, dtype, *_backward_grid(dtype))
    print(f"{result.function} {result.dtype}: worst {result.worst:.2f} ulp at {result.where}")
    assert result.points > 10
    assert result.silent == 0, result.where
    assert result.worst <= result.bound, f"{result.worst:.2f} ulp at {result.where}"


@pytest.mark.parametrize("key", ["layernorm", "layernorm_affine", "layernorm_std_eps_biased"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hvp_at_n_2_where_the_symbolic_n_form_cancels(key, dtype):
    """q >> epsilon at n = 2: the explicit two-entry form (derived) keeps every digit."""
    tiny = 1e-200 if dtype == np.float64 else 1e-20
    result = accuracy.vector(key, "hvp", dtype, np.array([0]), np.array([tiny]))
    assert result.worst <= result.bound, f"{result.worst:.3g} ulp at {result.where}"


@pytest.mark.parametrize(
    ("key", "name", "power", "eps", "family"),
    [
        ("layernorm_std_eps", "eigenvalues", 90, 1e-120, "scaled"),
        ("layernorm_std_eps_biased", "jacobian", 90, 1e-120, "scaled"),
        ("layernorm_std_eps_biased", "jvp", -30, 1e-240, "scaled"),
        ("rmsnorm_eps_outside", "eigen_x", 8, 1e-200, "offset"),
    ],
)
def test_epsilon_far_below_the_input_is_not_taken_where_an_intermediate_is_subnormal(key, name, power, eps, family):
    """Epsilon 1e-209 of the input's scale: the balanced scale (their geometric mean) is taken
    only where it computes the value with no IEEE flag raised. There eps / (s + eps)**2 can fall
    below the normal floats (about 1e-312) and keep 12 of 53 bits (4000 to 20000 ulp, as this
    grid measured before), where the input's own scale keeps them all."""
    result = accuracy.vector(key, name, np.float64, np.array([power]), np.array([eps]), family=family)
    assert result.points > 0
    assert result.worst <= result.bound, f"{result.worst:.3g} ulp at {result.where}"


@pytest.mark.xfail(strict=True, reason="beyond accuracy.SECOND_ORDER_SPAN in float64: stated in docs/accuracy.md")
def test_hvp_beyond_the_float64_span_is_a_known_limit(monkeypatch):
    """x ~ 1e-300 against epsilon = 1e60 (ratio 1e360): the product of layernorm_std_eps exists
    (about 1/epsilon**2) but no single float64 scaling keeps its terms in range."""
    monkeypatch.setattr(_rescale, "EXTENDED", False)  # a platform without a wider float
    monkeypatch.setattr(accuracy, "SECOND_ORDER_SPAN", np.inf)  # measure it anyway
    result = accuracy.vector("layernorm_std_eps", "hvp", np.float64, np.array([-300]), np.array([1e60]))
    assert result.points > 0
    assert result.worst <= result.bound


@pytest.mark.skipif(not _rescale.EXTENDED, reason="this platform's longdouble has float64's exponent range")
@pytest.mark.parametrize("key", ["layernorm_std_eps", "layernorm_std_eps_biased", "rmsnorm_eps_outside"])
@pytest.mark.parametrize(("exponent", "eps"), [(-300, 1e60), (-250, 1e100), (-320, 1.0)])
def test_hvp_beyond_the_float64_span_is_measured_in_a_wider_float(key, exponent, eps):
    """Where the platform has a wider float, those rows are taken in it: measured, within bounds."""
    assert np.isinf(accuracy.SECOND_ORDER_SPAN)
    result = accuracy.vector(key, "hvp", np.float64, np.array([exponent]), np.array([eps]))
    assert result.points > 0
    assert result.worst <= result.bound, f"{result.worst:.3g} ulp at {result.where}"


def test_the_measured_span_is_what_the_grid_skips(monkeypatch):
    """On a platform without a wider float, the grid leaves out rows whose scale and root of
    epsilon are more than 2^500 apart, as docs/accuracy.md states; with one, it leaves out none."""
    text = docs_words("accuracy.md")
    assert "more than 2⁵⁰⁰ apart" in text
    assert accuracy.second_order_span(False) == 2.0**500
    assert accuracy.second_order_span(True) == np.inf
    monkeypatch.setattr(accuracy, "SECOND_ORDER_SPAN", accuracy.second_order_span(False))  # float64's span
    layer = accuracy.facade("layernorm_std_eps")
    assert accuracy._apart(np.array([1e-300, -2e-300]), 1e60, layer)
    assert not accuracy._apart(np.array([1.0, -2.0]), 1e-8, layer)
    # A constant input (a zero one, uncentered) has no spread to be apart from epsilon by: measured.
    assert not accuracy._apart(np.full(3, 7.0), 1e-8, layer)
    assert not accuracy._apart(np.zeros(3), 1e60, accuracy.facade("rmsnorm"))
    # "More than": a row exactly 2^500 from the root of epsilon (1 at epsilon = 1) is measured.
    assert not accuracy._apart(np.array([2.0**500, 1.0]), 1.0, accuracy.facade("rmsnorm"))
    assert accuracy._apart(np.array([2.0**501, 1.0]), 1.0, accuracy.facade("rmsnorm"))


# Each family's label, read back: a function of (z, the power, the label's numbers) giving x.
_LABELS = [
    (r"x = 1e(-?\d+) z", lambda z, power: z * 10.0**power),
    (r"x = ([+-]1)e(-?\d+) 1", lambda z, sign, power: np.full(z.shape, sign * 10.0**power)),
    (r"x = 1e(-?\d+) \+ z", lambda z, power: 10.0**power + z),
    (r"x = 1e(-?\d+) \+ rint\((\d+) z\)", lambda z, power, factor: 10.0**power + np.rint(factor * z)),
]


@pytest.mark.parametrize("family", accuracy.FAMILIES)
def test_each_grid_input_is_what_its_label_says(family):
    """The tables name each input by how it was made (x = 1e4 + rint(3 z)): read back, the label
    gives the input the grid measured, bit for bit."""
    z = np.random.default_rng(0).standard_normal(7)
    labelled = [found for power in (-300, 0, 4, 15, 300) for found in accuracy._inputs(family, z, power, np.float64)]
    assert labelled
    for x, label in labelled:
        (rebuilt,) = [
            make(z, *map(int, m.groups())) for pattern, make in _LABELS if (m := re.fullmatch(pattern, label))
        ]
        np.testing.assert_array_equal(x, rebuilt, err_msg=label)


def _grid_inputs(dtype):
    """Every x and epsilon the grids above measure in ``dtype`` (x drawn as `accuracy.vector` draws it)."""
    small = np.dtype(dtype) == np.float32
    grids = [
        ("scaled", accuracy.exponents(dtype, 20 if small else 100), accuracy.exponents(dtype, 30 if small else 200))
    ]
    if not small:
        grids += [("constant", np.array([-300, 0, 300]), np.array([-300, -5, 300]))]
        grids += [(family, np.array([4, 15]), np.array([-300, -5, 300])) for family in ("offset", "integer offset")]
    for family, powers, exponents in grids:
        rng = np.random.default_rng(0)
        for size in accuracy.SIZES:
            z = rng.standard_normal(size)
            for power in powers:
                for inputs, _ in accuracy._inputs(family, z, int(power), dtype):
                    for eps in (10.0**exponents).astype(dtype):
                        yield inputs, eps


def _value_or_refusal(function, *args):
    try:
        value = function(*args)
    except ValueError as refused:
        return f"ValueError: {refused}"
    return [np.ravel(part) for part in value] if isinstance(value, tuple) else np.ravel(value)


@pytest.mark.parametrize("dtype", [slow(np.float64), np.float32], ids=str)
@pytest.mark.parametrize(
    "key", [key for key in REWRAPPED if key in accuracy.layer_keys() or accuracy.backward_functions(key)]
)
def test_the_wrapper_returns_its_base_s_values_bit_for_bit_on_the_grid(key, dtype):
    base = LAYERS[key].derived_as.key
    assert base not in REWRAPPED
    assert accuracy.vector_functions(key) == accuracy.vector_functions(base)
    assert accuracy.backward_functions(key) == accuracy.backward_functions(base)
    layer, reference = facade(key), facade(base)
    vectors = np.random.default_rng(1).standard_normal((2, max(accuracy.SIZES))).astype(dtype)
    compared = 0
    for inputs, eps in _grid_inputs(dtype):
        products = [  # the first-order products, as test_first_order_products_within_8n_ulp measures them
            (name, vectors[:, : len(inputs)][: len(layer._c.product(name).vectors)])
            for name in accuracy.backward_functions(key)
            if name != "hvp"
        ]
        for name, args in [*((name, ()) for name in accuracy.vector_functions(key)), *products]:
            found = _value_or_refusal(getattr(layer, name), inputs, eps, *args)
            expected = _value_or_refusal(getattr(reference, name), inputs, eps, *args)
            where = f"{key}.{name} at x = {inputs}, epsilon = {eps}"
            if isinstance(expected, str) or isinstance(found, str):
                assert found == expected, where
                continue
            for part, wanted in zip(
                found if isinstance(found, list) else [found],
                expected if isinstance(expected, list) else [expected],
                strict=True,
            ):
                assert part.dtype == wanted.dtype, where
                np.testing.assert_array_equal(part, wanted, err_msg=where, strict=True)
            compared += 1
    assert compared > 100


def test_the_scalar_grid_counts_every_normal_true_value_and_skips_only_zero():
    """Points whose true value is 0 (or not a normal number) are skipped; any other is measured.
    At t = 3, epsilon = 3 LayerNorm's response is exactly 1 (3 / sqrt(2*9/3 + 3)); at t = 0, exactly 0."""
    found = accuracy.scalar("layernorm", "response", np.float64, np.array([0.0, 3.0]), np.array([3.0]))
    assert (found.points, found.silent) == (1, 0)
    assert found.worst == 0.0


@pytest.mark.parametrize("silent", [0.0, np.inf, np.nan])
@pytest.mark.parametrize("position", [0, 1])
def test_a_silent_value_is_an_infinite_error_at_its_point(monkeypatch, silent, position):
    """A 0, inf or NaN where the true value is normal is counted and is the worst error, named at
    its point, wherever in the grid it falls (first or after a measured point)."""
    layer = facade("layernorm")
    response = layer.response

    def failing(t, eps):
        out = np.array(response(t, eps), dtype=np.float64)
        out[np.isclose(t, (1.0, 2.0)[position])] = silent
        return out

    monkeypatch.setattr(layer, "response", failing)
    found = accuracy.scalar("layernorm", "response", np.float64, np.array([1.0, 2.0]), np.array([0.5]))
    assert (found.points, found.silent) == (2, 1)
    assert found.worst == np.inf
    assert found.where.startswith(f"t = {position + 1:g}, epsilon = 0.5"), found.where
    assert not found.ok


def test_every_refusal_where_the_true_value_exists_is_counted_and_named(monkeypatch):
    """A forward pass that refuses rows whose value exists (a ValueError) fails its row: each
    refusal is counted, the error is infinite, and the message is shown at its point."""
    layer = facade("layernorm")

    def refusing(x, eps, *args):
        raise ValueError("refused for the test")

    grid = ("layernorm", "forward", np.float64, np.array([-3, 0, 3]), np.array([1e-5, 1.0]))
    measured = accuracy.vector(*grid)
    monkeypatch.setattr(layer, "forward", refusing)
    found = accuracy.vector(*grid)
    assert found.silent >= measured.points > 1  # every point measured before is a refusal now
    assert found.points == 0
    assert found.worst == np.inf
    assert found.where.endswith(": refused for the test"), found.where
    assert not found.ok


@pytest.mark.parametrize("lost", [np.inf, np.nan])
def test_every_lost_vector_in_the_grid_is_counted(monkeypatch, lost):
    """A forward pass that loses every row (inf or NaN where the true value is finite) is counted
    at each point of the vector grid, and is the worst error."""
    layer = facade("layernorm")
    forward = layer.forward

    def failing(x, eps, *args):
        return np.full_like(np.asarray(forward(x, eps, *args), dtype=np.float64), lost)

    monkeypatch.setattr(layer, "forward", failing)
    found = accuracy.vector("layernorm", "forward", np.float64, np.array([-3, 0, 3]), np.array([1e-5, 1.0]))
    assert found.points > 1
    assert found.silent == found.points
    assert found.worst == np.inf
    assert not found.ok


def test_the_reported_point_is_the_one_closest_to_its_own_bound(monkeypatch):
    """The bound is 8 n ulp, so the worst point is the largest error over 8 n, not the largest
    error and not the first: scripted errors, larger at larger n, one of them the worst ratio."""
    seen = []

    def scripted(key, name, inputs, eps, args, extra, info):
        error = [3.0, 9.0, 1.0, 20.0, 6.0][len(seen) % 5] * (1 + len(seen) / 100)
        seen.append((error, inputs.size, error / (accuracy.VECTOR_BOUND_PER_FEATURE * inputs.size)))
        return error, False, None

    monkeypatch.setattr(accuracy, "_measured", scripted)
    found = accuracy.vector("layernorm", "forward", np.float64, np.array([-3, 0, 3]), np.array([1e-5, 1.0]))
    error, size, _ = max(seen, key=lambda point: point[2])
    assert found.points == len(seen) > 5
    assert (found.worst, found.bound) == (error, accuracy.VECTOR_BOUND_PER_FEATURE * size)
    assert f"n = {size}," in found.where
    assert found.worst != max(point[0] for point in seen)
    assert found.worst != seen[0][0]


def test_a_layer_with_a_gain_and_a_bias_has_its_backward_product_measured_with_both_drawn():
    """dy, then the gain and the bias, each a standard-normal vector of x's size: the vjp of both
    affine layers is measured at each size of the grid (make test's tier takes the core layer's
    backward rows only)."""
    for key in ("layernorm_affine", "rmsnorm_affine"):
        found = accuracy.vector(key, "vjp", np.float64, np.array([0]), np.array([1.0]))
        assert (found.points, found.silent) == (len(accuracy.SIZES), 0), found
        assert found.worst <= found.bound, found


def test_a_real_parameter_in_epsilon_s_place_is_taken_with_both_signs_from_any_sequence():
    """DyT's alpha, a real number in epsilon's place, is measured at each magnitude with both
    signs, whether the grid comes as an array or a list; epsilon keeps its own."""
    for given in ([0.5, 2.0], np.array([0.5, 2.0])):
        np.testing.assert_array_equal(accuracy.parameter_values("dyt", given), [0.5, 2.0, -0.5, -2.0])
        np.testing.assert_array_equal(accuracy.parameter_values("layernorm", given), [0.5, 2.0])


def test_the_grids_step_as_the_accuracy_page_says():
    """docs/accuracy.md names the step of every grid, in decades: 10 throughout float32; in
    float64 one per family, for x and for epsilon."""
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "accuracy.md").read_text(encoding="utf-8").split())
    assert "by 10 decades in float32, seven magnitudes of its range for every family and for ε" in text
    assert "by 10 for t, 20 for ε of `response` and `slope`, 30 for x = 10^k·z and 60 for its ε, 100 for" in text
    assert "constant inputs and 150 for their ε, and 100 for the offsets' ε" in text

    def steps(powers: np.ndarray) -> set[int]:
        return set(np.diff(np.asarray(powers, dtype=np.float64)).round().astype(int).tolist())

    stated = {
        np.float32: {"scaled": (10, 10), "constant": (10, 10), "offset": (1, 10), "integer offset": (1, 10)},
        np.float64: {"scaled": (30, 60), "constant": (100, 150), "offset": (1, 100), "integer offset": (1, 100)},
    }
    for dtype, families in stated.items():
        grids = accuracy.vector_grids(dtype)
        assert set(grids) == set(families)
        for family, (powers, epsilons) in grids.items():
            assert (steps(powers), steps(np.log10(epsilons.astype(np.float64)))) == tuple({s} for s in families[family])
        ts, epsilons = accuracy.scalar_grid(dtype)
        count = len(accuracy.exponents(dtype, 10))
        assert steps(np.log10(ts[1 : 1 + count].astype(np.float64))) == {10}
        assert steps(np.log10(epsilons.astype(np.float64))) == {10 if dtype == np.float32 else 20}
        assert len(np.log10(epsilons.astype(np.float64))) >= 7


def _stated() -> str:
    """docs/accuracy.md's guarantee, in one line: the ranges its grids are said to reach."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "accuracy.md").read_text(encoding="utf-8")
    return " ".join(text[text.index("**Guarantee**") :].split("\n\n")[0].split())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_grids_reach_the_ranges_the_accuracy_page_states(dtype):
    """The guarantee names n in {2, 3, 16}, offsets 10^k for k = 4 ... 15, and every magnitude of the
    format: the sizes measured are those, the offset powers run exactly over that span, and every
    other family's powers of ten (and every family's epsilons) run in even steps from the smallest
    normal power that is a multiple of the step to the largest, with at least five magnitudes."""
    stated = _stated()
    sizes = re.search(r"n ∈ \{([\d, ]+)\}", stated)
    assert sizes is not None
    assert tuple(int(n) for n in sizes.group(1).split(",")) == accuracy.SIZES
    offsets = re.search(r"k = (\d+) … (\d+)", stated)
    assert offsets is not None
    info = np.finfo(dtype)
    low, high = np.log10(info.tiny), np.log10(info.max)

    def spans(powers: np.ndarray) -> None:
        assert len(powers) >= 5, powers
        step = int(np.diff(powers)[0])
        assert (np.diff(powers) == step).all(), powers
        assert powers[0] % step == 0, powers
        assert powers[0] - step < low <= powers[0], powers
        assert powers[-1] <= high < powers[-1] + step, powers

    for family, (powers, epsilons) in accuracy.vector_grids(dtype).items():
        if "offset" in family:
            assert list(powers) == list(range(int(offsets.group(1)), int(offsets.group(2)) + 1)), family
        else:
            spans(powers)
        spans(np.log10(epsilons).round().astype(int))
    ts, epsilons = accuracy.scalar_grid(dtype)
    spans(np.log10(epsilons.astype(np.float64)).round().astype(int))
    count = len(accuracy.exponents(dtype, 10))  # t: 0, then +10**k and -10**k, then random magnitudes
    assert ts[0] == 0.0
    spans(np.log10(ts[1 : 1 + count].astype(np.float64)).round().astype(int))
    spans(np.log10(-ts[1 + count : 1 + 2 * count].astype(np.float64)).round().astype(int))


def test_a_row_with_no_point_measured_reports_no_error_and_no_points():
    """A row given no epsilon measures nothing: 0 points, worst 0 ulp, bound 0, no place named
    (not a worst of 1 ulp with no bound); a row that measures reports its own error."""
    empty = accuracy.vector("layernorm", "forward", np.float64, np.array([0]), np.array([]))
    assert (empty.points, empty.worst, empty.bound, empty.where) == (0, 0.0, 0.0, "")
    one = accuracy.vector("layernorm", "forward", np.float64, np.array([0]), np.array([1e-5]))
    assert one.points > 0
    assert 0.0 <= one.worst <= one.bound


def test_the_report_measures_every_function_of_every_layer_in_both_dtypes(monkeypatch):
    """`make accuracy`'s rows: each scalar function once per dtype, and each vector and backward
    function once per dtype and input family, none dropped and none twice."""
    monkeypatch.setattr(accuracy, "scalar", lambda key, name, dtype, *grid: ("scalar", key, name, np.dtype(dtype)))
    monkeypatch.setattr(
        accuracy, "vector", lambda key, name, dtype, *grid, family: ("vector", key, name, np.dtype(dtype), family)
    )
    rows = accuracy.measure()
    dtypes = [np.dtype(d) for d in DTYPES]
    keys = accuracy.layer_keys()
    expected = [("scalar", k, f, d) for d in dtypes for k in keys for f in accuracy.scalar_functions(k)]
    expected += [
        ("vector", k, f, d, family)
        for d in dtypes
        for k, functions in [(k, accuracy.vector_functions(k)) for k in keys]
        + [(k, accuracy.backward_functions(k)) for k in accuracy.LAYERS]
        for f in functions
        for family in accuracy.FAMILIES
    ]
    assert sorted(rows, key=repr) == sorted(expected, key=repr)
    assert any(row[0] == "scalar" for row in rows)
    assert len(set(rows)) == len(rows)
