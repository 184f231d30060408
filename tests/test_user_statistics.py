"""Statistics introduced on demand (issue 30, item 7): a user layer whose derivatives need a power
sum or central moment that its definition does not name derives in full, with that statistic
introduced, printed, computed by numeric and the emitted code, and named by claims."""

import dataclasses
import importlib.util
from pathlib import Path

import mpmath
import numpy as np
import pytest
import sympy as sp
from docs_text import docs_words

import numeric
from derivations import LAYERS, catalog, definition, quantities
from derivations.__main__ import main
from derivations.codegen import emit, program
from derivations.core.layer import closed
from derivations.core.proof import DerivationError
from derivations.definition import DefinitionError
from derivations.derive.sums import Unfixed
from derivations.symbols import j, mu, x

ROOT = Path(__file__).resolve().parents[1]
WRITTEN = ROOT / "tests" / "definitions"

# Each layer, its statistics after the derivation's (name: summand), and its literal forward pass.
LAYERS_WITH_INTRODUCED = {
    "c4norm": (("mu", "m4", "m2", "m3"), lambda a, e: (a - _mean(a)) / (_mean((a - _mean(a)) ** 4) + e) ** 0.25),
    "l6norm": (("r6", "r2"), lambda a, e: a / (_mean(a**6) + e) ** (1 / 6)),
    "kurtnorm": (
        ("mu", "q", "m4", "m3"),
        lambda a, e: (
            (a - _mean(a)) * (_mean((a - _mean(a)) ** 2) + e) ** 0.5 / (_mean((a - _mean(a)) ** 4) + e**2) ** 0.5
        ),
    ),
}
# Every row a built-in layer of the same kind has, but the spectral norm and its bound: J is not
# symmetric (a right factor x**3 beside a left factor x), so ||J||_2 is not its largest |eigenvalue|.
ROWS = {
    "definition",
    "response",
    "slope",
    "slope_at_zero",
    "asymptote",
    "constant_response",
    "jacobian",
    "second_moment",
    "vjp",
    "jvp",
    "hvp",
    "homogeneity",
}
EIGEN = {
    "c4norm": {"eigen_ones", "eigen_centered", "eigen_complement"},
    "l6norm": {"eigen_x", "eigen_complement"},
    "kurtnorm": {"eigen_ones", "eigen_centered", "eigen_complement"},
}
KEYS = list(LAYERS_WITH_INTRODUCED)


def _mean(a):
    """The mean over the last axis, kept: NumPy arrays and lists of mpmath numbers alike."""
    if isinstance(a, np.ndarray):
        return np.mean(a, axis=-1, keepdims=True)
    return sum(a) / len(a)


def _path(key: str) -> Path:
    return WRITTEN / f"{key}.toml"


@pytest.mark.parametrize("key", KEYS)
def test_a_layer_with_statistics_the_built_ins_lack_derives_every_row(key):
    layer = definition.load(_path(key)).layer
    assert [str(stat.symbol) for stat in layer.statistics] == list(LAYERS_WITH_INTRODUCED[key][0])
    formulas = {f.name: f for f in quantities.formulas(layer)}
    assert set(formulas) == ROWS | EIGEN[key]
    # Every stated form (slope at zero, eigenvalues, second moment) is proved equal to the derivation.
    for name in layer.stated:
        assert formulas[name].stated, name
        assert formulas[name].proof, name


def test_the_introduced_statistics_are_central_moments_that_say_why():
    layer = definition.load(_path("c4norm")).layer
    m2, m3 = layer.statistics[2:]
    assert (m2.summand, m3.summand) == ((x[j] - mu) ** 2, (x[j] - mu) ** 3)
    assert m3.introduced == "dm4/dx_k (in J and the backward products)"
    assert m2.introduced == "dm3/dx_k (in the Hessian product), the second moment"
    assert m2.symbol.is_nonnegative
    assert not m3.symbol.is_nonnegative
    # The user's own statistics are not marked; a named q fixes x**2, so kurtnorm needs m3 alone.
    assert not any(stat.introduced for stat in layer.statistics[:2])
    assert [str(s.symbol) for s in definition.load(_path("kurtnorm")).layer.statistics if s.introduced] == ["m3"]


def test_without_the_introduced_statistics_the_jacobian_cannot_be_written():
    """The mechanism is what derives it: the layer with its own statistics alone is refused, naming x**3."""
    layer = definition.load(_path("c4norm")).layer
    own = dataclasses.replace(layer, statistics=layer.statistics[:2], stated={})
    with pytest.raises(Unfixed, match=r"x\[p\]\*\*3"):
        quantities.value(own, "jacobian")


@pytest.mark.parametrize("key", ["layernorm", "rmsnorm", "layernorm_std_eps", "rmsnorm_eps_outside", "scalenorm"])
def test_a_built_in_layer_needs_no_statistic_besides_its_own(key):
    built_in = LAYERS[key]
    assert closed(built_in, mu).statistics == built_in.statistics


def test_the_introduced_statistics_are_printed_among_the_statistics(capsys):
    assert main(["--definition", str(ROOT / "examples" / "c4norm.toml"), "--no-cache"]) == 0
    out = capsys.readouterr().out
    (line,) = [row for row in out.splitlines() if row.startswith("  established: for all n (the definition;")]
    assert "mu = mean(x[j]); m4 = mean((-mu + x[j])**4); " in line
    assert "m3 = mean((-mu + x[j])**3) (introduced, not in the definition; written in it: dm4/dx_k" in line
    assert "m2 = mean((-mu + x[j])**2) (introduced, not in the definition; written in it: dm3/dx_k" in line
    assert "c4norm.eigen_complement" in out
    assert "orthogonal to 1 and to the vector of entries c[k]**3" in out


def test_the_rows_a_user_layer_lacks_are_named_with_why(capsys):
    """c4norm's J is not symmetric: its spectral norm is not derived, and the run says so."""
    assert main(["--definition", str(ROOT / "examples" / "c4norm.toml"), "--no-cache"]) == 0
    captured = capsys.readouterr()
    assert "c4norm.spectral_norm" not in captured.out
    assert "note: c4norm has no spectral_norm row: J is not symmetric" in captured.err
    assert "note: c4norm has no spectral_bound row" in captured.err
    # A built-in layer has every row it can have: nothing is named.
    assert main(["--layer", "layernorm", "--no-cache"]) == 0
    assert "has no" not in capsys.readouterr().err


def _literal_list(key: str, a: list, e) -> list:
    """The layer's forward pass on a list of mpmath numbers, written out as its definition reads."""
    average = sum(a) / len(a)
    if key == "l6norm":
        scale = (sum(v**6 for v in a) / len(a) + e) ** (mpmath.mpf(1) / 6)
        return [v / scale for v in a]
    centered = [v - average for v in a]
    fourth = sum(v**4 for v in centered) / len(a)
    if key == "c4norm":
        return [v / (fourth + e) ** (mpmath.mpf(1) / 4) for v in centered]
    second = sum(v**2 for v in centered) / len(a)
    return [v * mpmath.sqrt(second + e) / mpmath.sqrt(fourth + e**2) for v in centered]


@pytest.mark.parametrize("key", KEYS)
def test_numeric_agrees_with_an_independent_reference_and_finite_differences(key, rng):
    layer = numeric.from_definition(_path(key))
    n, eps = 6, 0.3
    x0 = rng.standard_normal(n) * 1.5 + 0.7
    literal = LAYERS_WITH_INTRODUCED[key][1]
    np.testing.assert_allclose(layer.forward(x0, eps), literal(x0, eps), rtol=1e-13, atol=1e-15)
    jacobian = layer.jacobian(x0, eps)
    with mpmath.workdps(40):
        reference = _mp_jacobian(key, x0, eps)
    assert np.abs(jacobian - reference).max() <= 1e-13 * np.abs(reference).max()
    # Central differences of numeric's own forward pass, in random directions.
    for _ in range(3):
        direction = rng.standard_normal(n)
        h = 1e-6
        central = (layer.forward(x0 + h * direction, eps) - layer.forward(x0 - h * direction, eps)) / (2 * h)
        np.testing.assert_allclose(jacobian @ direction, central, rtol=1e-7, atol=1e-9)
    g, v = rng.standard_normal((2, n))
    np.testing.assert_allclose(layer.vjp(x0, eps, g), g @ reference, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(layer.jvp(x0, eps, v), reference @ v, rtol=1e-12, atol=1e-13)
    # The Hessian product: the derivative of J^T g along v, by central differences of numeric's vjp.
    h = 1e-5
    second = (layer.vjp(x0 + h * v, eps, g) - layer.vjp(x0 - h * v, eps, g)) / (2 * h)
    np.testing.assert_allclose(layer.hvp(x0, eps, g, v), second, rtol=1e-6, atol=1e-8)
    # The eigenvalues along the directions and the second moment, against the matrix and the output.
    # (J is not symmetric: numeric gives each derived eigenvalue, not a spectrum it would take as J's.)
    spectrum = np.linalg.eigvals(reference)
    for name in EIGEN[key]:
        value = float(getattr(layer, name)(x0, eps))
        assert np.abs(spectrum - value).min() <= 1e-9 * np.abs(spectrum).max(), name
    assert layer.second_moment(x0, eps) == pytest.approx(np.mean(literal(x0, eps) ** 2), rel=1e-13)


def _mp_jacobian(key: str, x0: np.ndarray, eps: float) -> np.ndarray:
    """J by central differences of the literal forward pass (`_literal_list`) in mpmath at the working
    precision (40 digits, h = 1e-15): independent of the derivation, of numeric and of autograd, and
    exact to far below float64's rounding."""
    point, e, h = [mpmath.mpf(float(v)) for v in x0], mpmath.mpf(eps), mpmath.mpf("1e-15")
    columns = []
    for m in range(len(point)):
        up = [v + (h if r == m else 0) for r, v in enumerate(point)]
        down = [v - (h if r == m else 0) for r, v in enumerate(point)]
        ahead, behind = _literal_list(key, up, e), _literal_list(key, down, e)
        columns.append([(a - b) / (2 * h) for a, b in zip(ahead, behind, strict=True)])
    return np.array([[float(columns[m][r]) for m in range(len(point))] for r in range(len(point))])


def test_the_emitted_numpy_module_computes_the_introduced_statistics(tmp_path, rng):
    layer = numeric.from_definition(_path("c4norm"))
    plan = program(layer.definition)
    assert [str(step.symbol) for step in plan.statistics if not step.vector][:4] == ["mu", "m4", "m2", "m3"]
    path = tmp_path / "emitted_c4norm.py"
    path.write_text(emit("c4norm", "numpy"))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x0, dy = rng.standard_normal((2, 3, 7))
    forward = getattr(module, plan.forward)(x0, 0.25)
    np.testing.assert_allclose(forward, layer.forward(x0, 0.25), rtol=1e-13, atol=1e-15)
    backward = getattr(module, plan.backward)(x0, 0.25, dy)
    backward = backward[0] if isinstance(backward, tuple) else backward
    np.testing.assert_allclose(backward, layer.vjp(x0, 0.25, dy), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("eigen_complement == (m4 + epsilon)**(-1/4)", "proved"),
        ("J @ ones == 0", "proved"),
        # m2 is a statistic the derivation introduced: a claim may name it, and is refuted where false.
        ("eigen_complement == 1/sqrt(m2 + epsilon)", "refuted"),
    ],
)
def test_claims_about_a_layer_with_introduced_statistics_are_decided(claim, verdict, capsys):
    status = main(["check", "--definition", str(_path("c4norm")), "--no-cache", claim])
    out = capsys.readouterr().out
    assert out.startswith(f"[inline] {verdict}: {claim}  [c4norm]"), out
    assert status == (0 if verdict == "proved" else 1)


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("statistics.a", 'output = "x[i] / (a + epsilon)"\n[statistics]\na = "max(abs(x[j]))"\n'),
        ("output", 'output = "x[i] / (max(abs(x[j])) + epsilon)"\n[statistics]\nr = "mean(x[j]**2)"\n'),
    ],
)
def test_a_max_over_the_entries_is_refused_naming_the_rows_and_why(field, text):
    with pytest.raises(DefinitionError) as refused:
        definition.loads(f'key = "maxnorm"\ntitle = "M"\n{text}')
    message = str(refused.value)
    assert message.startswith(f"{field}: a max or min over the entries x[j] is not a mean")
    assert "(jacobian, eigen, spectral_norm, spectral_bound, vjp, jvp, hvp)" in message
    assert "indicator of the entry where it is reached" in message


def test_an_entrywise_max_inside_a_mean_is_not_refused_as_a_max_over_the_entries():
    text = 'key = "m"\ntitle = "M"\noutput = "x[i] / (a + epsilon)"\n[statistics]\na = "mean(max(x[j]**2, 1))"\n'
    assert str(definition.loads(text).layer.statistics[0].symbol) == "a"


def test_names_of_introduced_statistics_do_not_take_a_users_name():
    text = (
        'key = "c4n"\ntitle = "C"\noutput = "(x[i] - mu) / (m4 + epsilon)**(1/4)"\n[statistics]\n'
        'mu = "mean(x[j])"\nm4 = "mean((x[j] - mu)**4)"\nm3 = "mean(x[j]**2)"\n'
    )
    layer = definition.loads(text).layer
    introduced = {str(s.symbol): s.summand for s in layer.statistics if s.introduced}
    # The user's m3 (a raw mean square) fixes x**2: only the third central moment is missing, as m3_1.
    assert introduced == {"m3_1": (x[j] - mu) ** 3}
    assert sp.simplify(quantities.value(layer, "second_moment")) != 0


SHIFTED = """key = "layernorm_shifted"
title = "LayerNorm, its mean written through a derived statistic h = -2 mu"
output = "(x[i] + h / 2) / sqrt(q + epsilon)"

[statistics]
mu = "mean(x[j])"
h = "-2 * mu"
q = "mean((x[j] - mu)**2)"
"""


def test_a_derived_statistic_of_either_sign_is_solved_for_the_mean_it_is_built_on(tmp_path):
    """h = -2 mu, a statistic that may be negative, is solved for mu as mu = -h/2 (the nonnegative
    ones are solved through their square): LayerNorm written through it derives LayerNorm's forward
    pass and backward pass, and no eigenvalue it cannot find is reported as a spectral norm."""
    path = tmp_path / "shifted.toml"
    path.write_text(SHIFTED)
    layer = numeric.from_definition(path)
    rng = np.random.default_rng(7)
    x, g = rng.normal(size=(5, 4)) * 3 + 1, rng.normal(size=(5, 4))
    for eps in (1e-3, 0.3, 4.0):
        np.testing.assert_allclose(layer.forward(x, eps), numeric.layernorm.forward(x, eps), rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(layer.vjp(x, eps, g), numeric.layernorm.vjp(x, eps, g), rtol=1e-12, atol=1e-13)
    names = {f.name for f in catalog.formulas("layernorm_shifted")}
    assert {"vjp", "hvp"} <= names
    assert "spectral_norm" not in names  # its directions (x and its complement) are no eigenvectors of J


def test_at_most_eight_statistics_are_introduced_as_the_docs_state(monkeypatch):
    """docs/definitions.md: at most 8 introduced besides the layer's own; a layer may need exactly
    the bound (c4norm needs 2: m2 and m3), and one more than it is refused by name."""
    import derivations.core.layer as layer_module

    text = docs_words("definitions.md")
    assert "(at most 8 besides the layer's own statistics; a layer that needs more is refused)" in text
    assert layer_module.MAX_INTRODUCED == 8
    bare = definition.load(ROOT / "examples" / "c4norm.toml").layer
    own = [stat for stat in bare.statistics if not stat.introduced]
    base = dataclasses.replace(bare, statistics=tuple(own))
    monkeypatch.setattr(layer_module, "MAX_INTRODUCED", 2)
    assert len(closed(base, mu).statistics) == len(own) + 2
    monkeypatch.setattr(layer_module, "MAX_INTRODUCED", 1)
    with pytest.raises(DerivationError, match=r"its derivations need more than 1 statistics besides its own"):
        closed(base, mu)


def test_the_mean_a_layer_without_a_centre_needs_is_the_first_power_mean(tmp_path):
    """(x + 1)/sqrt(r + epsilon): its second moment needs mean(x), a power sum of degree 1, which is
    introduced as the power mean r1 (as x**6 gives r6), not as a mean of an arbitrary summand (z)."""
    path = tmp_path / "shiftnorm.toml"
    path.write_text(
        'key = "shiftnorm"\ntitle = "Shifted"\noutput = "(x[i] + 1) / sqrt(r + epsilon)"\n'
        '[statistics]\nr = "mean(x[j]**2)"\n',
        encoding="utf-8",
    )
    layer = definition.load(path).layer
    (mean,) = (stat for stat in layer.statistics if stat.introduced)
    assert (str(mean.symbol), mean.summand, mean.introduced) == ("r1", x[j], "the second moment")
    assert "power mean" in mean.meaning


def test_a_monomial_that_is_not_a_polynomial_is_introduced_after_every_polynomial_one():
    """The order statistics are introduced in: by degree in x[p], a monomial that is not a
    polynomial in it (|x|**3, a square root) last, after any degree a definition can reach."""
    from derivations.core.layer import _degree, p

    degrees = [_degree(x[p] ** 40), _degree(sp.Abs(x[p]) ** 3), _degree(sp.sqrt(x[p])), _degree(x[p] ** 2 - mu)]
    assert degrees[0] == 40
    assert degrees[3] == 2
    assert degrees[1] == degrees[2] > 10**9
