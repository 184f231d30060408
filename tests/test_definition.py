"""Layers defined by the user in TOML: the issue's example, the built-in layers rewritten, errors, bounds."""

import dataclasses
import os
import re
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from docs_text import docs_words
from grids import tiered

import numeric
from derivations import LAYERS, catalog, definition, quantities
from derivations.__main__ import main
from derivations.definition import DefinitionError
from derivations.notation import DEFAULT
from derivations.render import text
from derivations.symbols import epsilon, r, t
from numeric.checks.agreement import assert_agree

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "l4norm.toml"
WRITTEN = ROOT / "tests" / "definitions"
GOLDEN = ROOT / "tests" / "golden" / "derive.txt"

# The built-in layers a TOML file can write; each file in tests/definitions/ is one of them.
REWRITTEN = ("layernorm", "layernorm_std_eps", "rmsnorm", "rmsnorm_eps_outside")

MINIMAL = """\
key = "mine"
title = "Mine"
output = "x[i] / sqrt(r + epsilon)"
[statistics]
r = "mean(x[j]**2)"
"""


def _renamed(key: str, tmp_path: Path) -> Path:
    """The rewritten built-in under a key of its own: `register` refuses a built-in key."""
    source = (WRITTEN / f"{key}.toml").read_text()
    assert f'key = "{key}"\n' in source
    path = tmp_path / f"{key}.toml"
    path.write_text(source.replace(f'key = "{key}"\n', f'key = "{key}_toml"\n'))
    return path


def _golden_block(key: str) -> str:
    blocks = GOLDEN.read_text().rstrip("\n").split("\n\n")
    return "\n\n".join(block for block in blocks if block.split("\n", 1)[0].startswith(f"{key}.")) + "\n"


# --- the example ------------------------------------------------------


def test_the_minimal_example_derives_and_proves_its_stated_form():
    layer = definition.load(EXAMPLE).layer
    found = {f.name: f for f in quantities.formulas(layer)}
    assert found["slope_at_zero"].proof == "expand(derived - stated) = 0"
    # J = I/s - x (x**3)^T / (n s**5), s = (r + epsilon)**(1/4): x is an eigenvector with epsilon/s**5.
    assert sp.simplify(quantities.value(layer, "eigen_x") - epsilon / (r + epsilon) ** sp.Rational(5, 4)) == 0
    assert r"\circ {3}" in found["jacobian"].latex()
    # J is not symmetric: no spectral norm, and no bound is claimed from eigenvalues.
    assert "spectral_norm" not in found
    assert "spectral_bound" not in found
    # w orthogonal to x is no eigenvector (J w has x**3 . w in it): the complement is taken orthogonal to
    # the gradient of r, x**3, where J w = w / s.
    assert "orthogonal to the vector of entries x[k]**3" in found["eigen_complement"].statement
    assert sp.simplify(quantities.value(layer, "eigen_complement") - (r + epsilon) ** sp.Rational(-1, 4)) == 0
    assert "numeric evaluates at m = max(|x|, epsilon**(1/4))" in found["homogeneity"].statement


def test_the_minimal_example_source_bytes_are_kept_for_a_cache_key():
    loaded = definition.load(EXAMPLE)
    assert loaded.source == EXAMPLE.read_bytes()
    assert loaded.path == EXAMPLE


def test_a_wrong_stated_form_fails_the_derivation(tmp_path):
    path = tmp_path / "wrong.toml"
    path.write_text(EXAMPLE.read_text().replace('"epsilon**(-1/4)"', '"epsilon**(-1/2)"'))
    with pytest.raises(DefinitionError, match=r"l4norm: cannot be derived: .*slope_at_zero.*not provably equal"):
        definition.derive_within(definition.load(path).layer, 60)


def test_numeric_from_definition_agrees_with_the_definition_and_finite_differences(rng):
    layer = numeric.from_definition(EXAMPLE)
    assert {"forward", "jacobian", "vjp", "jvp", "hvp", "slope_at_zero"} <= set(layer.names())
    x = rng.standard_normal((4, 5))
    eps = 0.25
    expected = x / (np.mean(x**4, axis=-1, keepdims=True) + eps) ** 0.25
    np.testing.assert_allclose(layer.forward(x, eps), expected, rtol=1e-14)
    jacobian = layer.jacobian(x[0], eps)
    direction = rng.standard_normal(5)
    h = 1e-6 * np.linalg.norm(x[0])
    central = (layer.forward(x[0] + h * direction, eps) - layer.forward(x[0] - h * direction, eps)) / (2 * h)
    np.testing.assert_allclose(jacobian @ direction, central, rtol=1e-7, atol=1e-9)
    g = rng.standard_normal(5)
    np.testing.assert_allclose(layer.vjp(x[0], eps, g), g @ jacobian, rtol=1e-12)
    np.testing.assert_allclose(layer.jvp(x[0], eps, direction), jacobian @ direction, rtol=1e-12)
    assert float(layer.slope_at_zero(eps)) == pytest.approx(eps**-0.25, rel=1e-15)


# --- generality: the built-in layers, written as files ------------------------


@pytest.mark.parametrize("key", tiered(REWRITTEN, fast=1))
def test_a_rewritten_built_in_layer_derives_the_golden_output(key):
    layer = definition.load(WRITTEN / f"{key}.toml").layer
    assert text(f.row(DEFAULT) for f in quantities.formulas(layer)) == _golden_block(key)


@pytest.mark.parametrize("key", ["rmsnorm_eps_outside", "layernorm_std_eps"])
def test_a_rewritten_layer_whose_spread_is_no_mean_approaches_the_degenerate_input_as_the_built_in(key):
    """A spread that is not a smooth mean (a root, added to epsilon) has its Jacobian's limit at
    the degenerate input taken along a path: every entry, and the spread, scaled by tau (about the
    mean where the layer centres), the path the built-in layer states."""
    layer = definition.load(WRITTEN / f"{key}.toml").layer
    assert dict(layer.approach) == dict(LAYERS[key].approach)


def test_the_golden_comparison_can_fail():
    layer = definition.load(WRITTEN / "rmsnorm.toml").layer
    dropped = dataclasses.replace(layer, stated={k: v for k, v in layer.stated.items() if k != "eigen_x"})
    assert text(f.row(DEFAULT) for f in quantities.formulas(dropped)) != _golden_block("rmsnorm")


@pytest.mark.parametrize("key", ["rmsnorm_eps_outside", "layernorm"])
def test_a_rewritten_built_in_layer_computes_bit_for_bit_the_same(key, tmp_path, rng, numpy_backend):
    """On NumPy's path, which a user's layer takes (a built-in one may run compiled C)."""
    built_in = getattr(numeric, key).LAYER
    user = numeric.from_definition(_renamed(key, tmp_path), timeout=None)
    assert user.names() == built_in.names()
    x, g, v = rng.standard_normal((3, 4, 5))
    arguments = {
        "of_t": (np.linspace(-3, 3, 7), 0.25),
        "of_epsilon": (np.array([1e-5, 0.25]),),
        "of_statistics": (x, 1e-3),
    }
    products = {"vjp": (x, 1e-3, g), "jvp": (x, 1e-3, v), "hvp": (x, 1e-3, g, v)}
    for name in built_in.names():
        found = quantities.by_numeric(built_in.definition, name)
        args = products.get(name) or arguments.get(found[1].evaluate if found else "", (x, 1e-3))
        assert np.array_equal(getattr(user, name)(*args), getattr(built_in, name)(*args)), name


def _printed(capsys, argv: list[str], status: int = 0) -> str:
    """What ``python -m derivations`` prints for ``argv``, run in this process (a real process:
    tests/test_outputs.py); its status and an empty stderr are checked."""
    assert main(argv) == status
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def test_the_command_line_prints_a_rewritten_layer_as_the_built_in(tmp_path, capsys):
    user = _printed(capsys, ["--definition", str(_renamed("rmsnorm", tmp_path)), "--format", "json"])
    assert user.replace("rmsnorm_toml", "rmsnorm") == _printed(capsys, ["--layer", "rmsnorm", "--format", "json"])


# --- the command line ---------------------------------------------------------


CLAMPED = Path(__file__).parent / "definitions" / "clamped" / "l2norm_clamped.toml"


def test_a_clamp_written_with_max_is_derived_by_the_regimes_of_the_built_in():
    """torch's normalize as a file: every derived relation is the built-in l2norm_clamped's, tree for tree,
    and its numeric functions are the same bit for bit, the kink reported."""
    catalog.register(definition.load(CLAMPED).layer)
    mine = {f.name: f.expr for f in catalog.formulas("l2norm_clamped_toml")}
    theirs = {f.name: f.expr for f in catalog.formulas("l2norm_clamped")}
    assert mine.keys() == theirs.keys()
    assert {"kink", "kink_uniform", "jacobian_jump"} <= mine.keys()
    assert [name for name in theirs if sp.srepr(mine[name]) != sp.srepr(theirs[name])] == []
    layer = numeric.from_definition(CLAMPED)
    x = np.array([[3.0, 4.0, 0.0], [0.03, 0.04, 0.0], [1.0, -2.0, 0.5]])
    for eps in (0.01, 1.0, 7.0):
        assert np.array_equal(layer.forward(x, eps), numeric.l2norm_clamped.forward(x, eps))
        assert np.array_equal(layer.jacobian(x, eps), numeric.l2norm_clamped.jacobian(x, eps))
    with pytest.raises(ValueError, match="x has a row on"):
        layer.jacobian(np.array([0.5, 0.0, 0.0, 0.0]), 0.5)


@pytest.mark.parametrize(
    "output",
    ["x[i] / min(z + epsilon, 10)", "x[i] / max(z, epsilon) / max(r, epsilon)", "x[i] / max(z + r, epsilon)"],
)
def test_a_clamp_of_another_form_is_one_line_naming_the_output(tmp_path, output):
    path = tmp_path / "clamp.toml"
    path.write_text(
        f'key = "clamp"\ntitle = "C"\noutput = "{output}"\n[statistics]\nr = "mean(x[j]**2)"\nz = "sqrt(r)"\n'
    )
    with pytest.raises(DefinitionError, match=r"^output: a clamp is derived as one max\(statistic, floor\)"):
        definition.load(path)


def test_a_clamp_no_scaling_of_epsilon_keeps_in_place_cannot_be_derived_and_says_why(tmp_path):
    """max(mean(x**4), epsilon): the statistic scales as m**4, epsilon (as the built-in layers'
    m**2 or m) cannot follow it, so the kink moves with the scale of x: refused with that reason."""
    path = tmp_path / "clamp4.toml"
    path.write_text(
        'key = "clamp4"\ntitle = "C"\noutput = "x[i] / max(z, epsilon)"\n[statistics]\nz = "mean(x[j]**4)"\n'
    )
    named = r"^clamp4: cannot be derived: DerivationError: clamp4: no scaling of epsilon keeps Eq\(z, epsilon\)"
    with pytest.raises(DefinitionError, match=named):
        definition.derive_within(definition.load(path).layer, 60)


@pytest.mark.parametrize("named", ["r", "z"])
def test_the_spread_is_the_statistic_the_file_names(tmp_path, named):
    path = tmp_path / "spread.toml"
    path.write_text(
        'key = "spreads"\ntitle = "S"\noutput = "x[i] / (z + epsilon)"\nspread = "' + named + '"\n'
        '[statistics]\nr = "mean(x[j]**2)"\nz = "sqrt(r)"\n'
    )
    assert str(definition.load(path).layer.spread) == named


@pytest.mark.parametrize("floor", ["sqrt(n) * epsilon", "epsilon**2", "epsilon + 1"])
def test_a_clamp_whose_floor_is_not_a_multiple_of_epsilon_is_refused(tmp_path, floor):
    """A floor in n stayed symbolic on a pattern of fixed size (true claims were refuted at n = 2)."""
    path = tmp_path / "floor.toml"
    path.write_text(
        f'key = "floor"\ntitle = "F"\noutput = "x[i] / max(z, {floor})"\n'
        '[statistics]\nr = "mean(x[j]**2)"\nz = "sqrt(r)"\n'
    )
    with pytest.raises(DefinitionError, match=r"^output: the floor of a clamp must be epsilon or a positive multiple"):
        definition.load(path)
    path.write_text(path.read_text().replace(floor, "2 * epsilon"))
    assert definition.load(path).layer.boundary == sp.Eq(
        sp.Symbol("z", nonnegative=True), 2 * sp.Symbol("epsilon", positive=True)
    )


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (
            'output = "(x[i] - mu) / max(z, epsilon)"\n[statistics]\nmu = "mean(x[j])"\n'
            'q = "mean((x[j] - mu)**2)"\nz = "sqrt(q)"\n',
            "output: a clamp is derived for a layer with no mean statistic",
        ),
        (
            'output = "x[i] / max(z, epsilon)"\n[statistics]\nr = "mean(x[j]**2)"\nz = "sqrt(r)"\n'
            '[[directions]]\nname = "x"\nentry = "x[k]"\nmeaning = "x"\n',
            "directions: a clamp's are x and its complement",
        ),
    ],
)
def test_a_clamp_the_regimes_cannot_take_is_one_line_naming_the_field(tmp_path, body, named):
    """A centred clamp's eigenvectors (1, c) are not the regimes' (x): it stopped inside them (a hostile review)."""
    path = tmp_path / "clamp.toml"
    path.write_text('key = "clamp"\ntitle = "C"\n' + body)
    with pytest.raises(DefinitionError, match="^" + re.escape(named)):
        definition.load(path)


def test_a_spectral_norm_with_no_provable_largest_eigenvalue_is_left_out(tmp_path):
    """x exp(-r/epsilon): |eigenvalues| exp(-r/eps)|eps - 2r|/eps and exp(-r/eps) have no provable order, so
    the norm is left out, not the whole derivation stopped (a hostile review)."""
    path = tmp_path / "expn.toml"
    path.write_text('key = "expn"\ntitle = "E"\noutput = "x[i] * exp(-r/epsilon)"\n[statistics]\nr = "mean(x[j]**2)"\n')
    catalog.register(definition.load(path).layer)
    names = [f.name for f in catalog.formulas("expn")]
    assert {"jacobian", "eigen_x", "eigen_complement", "vjp", "hvp"} <= set(names)
    assert "spectral_norm" not in names
    assert "spectral_norm" not in numeric.from_definition(path).names()
    # Nor a Lipschitz constant, which is the spectral norm's supremum: it does not apply.
    from derivations import quantities

    for key, applies in (("expn", False), ("rmsnorm", True)):
        quantity, item = quantities.names(catalog.LAYERS[key])["lipschitz"]
        assert quantity.applies(catalog.LAYERS[key], item) is applies, key
    # Each row left out is named with the derivation's own reason (the note `derivations` prints).
    why = dict(quantities.left_out(catalog.LAYERS["expn"]))
    assert set(why) == {"spectral_norm", "spectral_bound"}
    for reason in why.values():
        assert reason.startswith("expn.spectral_norm, n >= 2: no largest among [exp(-r/epsilon)"), reason


def test_a_statistic_that_is_a_root_of_an_earlier_mean_is_derived(tmp_path, rng):
    """z = r**(1/4) is solved for r in general (r = z**4, checked by substituting back), not linearly."""
    path = tmp_path / "l4root.toml"
    path.write_text(
        'key = "l4root"\ntitle = "R"\noutput = "x[i] / (z + epsilon)"\n'
        '[statistics]\nr = "mean(x[j]**4)"\nz = "r**(1/4)"\n[stated]\nslope_at_zero = "1/epsilon"\n'
    )
    layer = numeric.from_definition(path)
    x, eps = rng.standard_normal((3, 5)), 0.25
    expected = x / (np.mean(x**4, axis=-1, keepdims=True) ** 0.25 + eps)
    assert_agree(layer.forward(x, eps), expected, rtol=1e-14, what="forward")
    direction, h = rng.standard_normal(5), 1e-6
    central = (layer.forward(x[0] + h * direction, eps) - layer.forward(x[0] - h * direction, eps)) / (2 * h)
    assert_agree(layer.jacobian(x[0], eps) @ direction, central, rtol=1e-7, atol=1e-9, what="J v")


def test_a_well_formed_file_the_derivation_cannot_finish_is_one_line_and_status_1(tmp_path, capsys):
    """Not a bad file (status 2): a construct with no Jacobian rule, as a built-in whose derivation fails."""
    path = tmp_path / "absnorm.toml"
    path.write_text(
        'key = "absnorm"\ntitle = "A"\noutput = "x[i] / (r + epsilon)"\n[statistics]\nr = "mean(abs(x[j]))"\n'
    )
    assert main(["--definition", str(path), "--no-cache"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert re.fullmatch(r"python -m derivations: error: .*absnorm: cannot be derived: .*", captured.err.strip())
    assert len(captured.err.splitlines()) == 1


def test_a_claims_file_entry_without_a_layer_is_about_the_defined_one(tmp_path, capsys):
    """Not layernorm, the default without --definition: 1/sqrt(epsilon) is refuted for l4norm (epsilon**(-1/4))."""
    claims = tmp_path / "claims.toml"
    claims.write_text('[[claim]]\nid = "a"\nclaim = "slope_at_zero == 1/sqrt(epsilon)"\n')
    out = _printed(capsys, ["check", "--definition", str(EXAMPLE), "--claims", str(claims)], status=1)
    assert out.startswith("[a] refuted: slope_at_zero == 1/sqrt(epsilon)  [l4norm]")
    # --layer names the layer of such entries too; with --definition it is refused, as for derive.
    out = _printed(capsys, ["check", "--layer", "rmsnorm_eps_outside", "--claims", str(claims)], status=1)
    assert out.startswith("[a] refuted: slope_at_zero == 1/sqrt(epsilon)  [rmsnorm_eps_outside]")
    with pytest.raises(SystemExit) as stopped:
        main(["check", "--layer", "rmsnorm", "--definition", str(EXAMPLE), "slope_at_zero > 0"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().endswith("give --layer or --definition, not both")


def test_check_decides_claims_about_a_defined_layer(tmp_path, capsys):
    claims = tmp_path / "claims.toml"
    claims.write_text(
        '[[claim]]\nid = "a"\nlayer = "l4norm"\nclaim = "slope_at_zero == epsilon**(-1/4)"\n'
        '[[claim]]\nid = "b"\nlayer = "l4norm"\nclaim = "J @ x == eigen_x * x"\n'
        '[[claim]]\nid = "c"\nlayer = "l4norm"\nclaim = "slope_at_zero == 1/sqrt(epsilon)"\n'
    )
    out = _printed(capsys, ["check", "--definition", str(EXAMPLE), "--claims", str(claims)], status=1)
    assert [line.split()[:2] for line in out.splitlines() if line.startswith("[")] == [
        ["[a]", "proved:"],
        ["[b]", "proved:"],
        ["[c]", "refuted:"],
    ]


def _error_line(capsys, argv: list[str], status: int) -> str:
    assert main(argv) == status
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def _output(text: str) -> str:
    return MINIMAL.replace('"x[i] / sqrt(r + epsilon)"', text)


def _statistics(text: str) -> str:
    return MINIMAL.replace('r = "mean(x[j]**2)"', text)


# (file content, the field or reason the one-line error names)
BAD_FILES = [
    (_output('"foo(x[i]) / sqrt(r + epsilon)"'), "output: call to 'foo'"),
    (_output('"x[i] / sqrt(y + epsilon)"'), "output: unknown name 'y'"),
    (_output('"x[i] / sqrt(r + eps)"'), "output: unknown name 'eps' at column 17; did you mean 'epsilon'?"),
    (_output('"x / sqrt(r + epsilon)"'), "output: 'x' at column 1 is a vector: write its entry, x[i]"),
    (_statistics('r = "mean(x**2)"'), "statistics.r: 'x' at column 1 is a vector: write its entry, x[j]"),
    (_statistics('r = "x[j]**2"'), "statistics.r: x enters a statistic through a mean over its entries: write x[j]"),
    # A max of a statistic is no max over the entries: the x[j] after it is what is wrong.
    (
        _statistics('r = "mean(x[j]**2)"\nz = "max(r, 1) * x[j]"'),
        "statistics.z: x enters a statistic through a mean over its entries: write x[j]",
    ),
    (_output('"x[j] / sqrt(r + epsilon)"'), "output: subscript 'x[j]'"),
    (_output('"r / sqrt(r + epsilon)"'), "output: must use x[i]"),
    (_output('"x[i] / sqrt(r)"'), "output: must use epsilon"),
    (_output('"x[i] ** 1000 / sqrt(r + epsilon)"'), "output: exponent"),
    (_output('"x[i] ** r / sqrt(r + epsilon)"'), "output: the exponent"),
    (_output("\"__import__('os')\""), "output: call to '__import__'"),
    (_output('"x[i].real"'), "output: attribute access"),
    (MINIMAL.replace("x[i] / sqrt(r + epsilon)", "(" * 50 + "x[i]" + ")" * 50), "output: brackets nested deeper"),
    (_output("42"), "output: must be a string; got an integer"),
    (MINIMAL.replace('output = "x[i] / sqrt(r + epsilon)"\n', ""), "output: missing"),
    (MINIMAL.replace('key = "mine"\n', ""), "key: missing"),
    (MINIMAL.replace('key = "mine"', 'key = "Mine!"'), "key: must be lower case"),
    (MINIMAL.replace('key = "mine"', 'key = "rmsnorm"'), "key 'rmsnorm' is a built-in layer"),
    (MINIMAL.replace('title = "Mine"', "title = [1]"), "title: must be a string; got an array"),
    ("colour = 1\n" + MINIMAL, "colour: unknown field"),
    (_statistics('r = "mean(r * x[j]**2)"'), "statistics.r: refers to itself"),
    (
        _statistics('r = "mean(x[j]**2 + q)"\nq = "mean(x[j])"'),
        "statistics.r: refers to 'q'",
    ),
    (_statistics('r = "mean(r)"'), "statistics.r: refers to itself"),
    (
        # The third of four refers to the fourth: every later statistic is looked at, not just the next.
        _statistics('r = "mean(x[j]**2)"\nm2 = "mean(x[j])"\nm3 = "mean(x[j]**3 + m4)"\nm4 = "mean(x[j]**4)"'),
        "statistics.m3: refers to 'm4'",
    ),
    (_statistics('r = "mean(2)"'), "statistics.r: the mean's summand must use x[j]"),
    # Two means of x tied to each other (h = 2 mu) are named, not said to contradict each other.
    (
        _statistics('r = "mean(x[j]**2)"\nh = "mean(2 * x[j])"\nq = "mean(x[j]**3)"\nmu = "mean(x[j])"'),
        "statistics: h, mu are not independent: one is a function of the others; define it as one",
    ),
    (_statistics('r = "mean(x[j]**2)"\nm2 = "n + 1"'), "statistics.m2: must be mean(...) over x[j], or"),
    (_statistics('r = "mean(x[j]**2)"\nt = "mean(x[j])"'), "statistics.t: not a usable"),
    (MINIMAL.replace('[statistics]\nr = "mean(x[j]**2)"\n', ""), "statistics: missing"),
    (MINIMAL + '[stated]\nslope_at_zro = "1"\n', "stated.slope_at_zro: not a result of this layer"),
    (MINIMAL + '[stated]\njacobian = "I @ "\n', "stated.jacobian: cannot parse"),
    # A form by cases: each case a pair of strings, value and condition; one to four of them.
    (
        MINIMAL + '[stated]\nspectral_norm = [["1 / s"]]\n',
        'stated.spectral_norm[0]: must be a pair ["value", "condition',
    ),
    (
        MINIMAL + '[stated]\nspectral_norm = [["1 / s", "n >= 2", "n >= 3"]]\n',
        "stated.spectral_norm[0]: must be a pair",
    ),
    (MINIMAL + '[stated]\nspectral_norm = [["1 / s", 2]]\n', "stated.spectral_norm[0]: must be a pair"),
    (
        MINIMAL + "[stated]\nspectral_norm = [" + ", ".join(['["1", "n >= 2"]'] * 5) + "]\n",
        "cases must be an array of 1 to 4",
    ),
    (MINIMAL + "[[patterns]]\nvalues = [1, 2]\n", "patterns[0].values[0]: must be a string"),
    # A pattern is a point of 2 to 8 coordinates: one value is a number, not a direction.
    (MINIMAL + '[[patterns]]\nvalues = ["t"]\n', "patterns[0].values: must be an array of 2 to 8 expressions"),
    (MINIMAL + "[[patterns]]\nvalues = [" + ", ".join(['"t"'] * 9) + "]\n", "must be an array of 2 to 8"),
    (MINIMAL + '[[patterns]]\nvalues = ["t", "t"]\ncoordinate = 5\n', "patterns[0].coordinate"),
    (MINIMAL + '[[patterns]]\nvalues = ["t", "t"]\nsuffix = "_ab-c"\n', "patterns[0].suffix: must be empty or like"),
    (MINIMAL + f'[[patterns]]\nvalues = ["t", "t"]\nsuffix = "_{"a" * 20}"\n', "of at most 20 characters"),
    (MINIMAL + '[[directions]]\nname = "x"\nentry = "q[k]"\n', "directions[0].entry: subscript 'q[k]'"),
    (MINIMAL.replace('title = "Mine"', 'title = "   "'), "title: must be one non-empty printable line of at most 200"),
    (MINIMAL.replace('title = "Mine"', f'title = "{"M" * 201}"'), "title: must be one non-empty printable line"),
    (
        MINIMAL.replace('output = "x[i] / sqrt(r + epsilon)"', 'output = ""'),
        "output: must be one non-empty printable line",
    ),
    ("key = \n", "not valid TOML"),
    (b'key = "caf\xe9"\n', "not UTF-8"),
]


@pytest.mark.parametrize(("content", "named"), BAD_FILES)
def test_a_bad_definition_is_one_line_naming_the_field(content, named, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    line = _error_line(capsys, ["--definition", str(path)], 2)
    assert line.startswith(f"python -m derivations: error: {path}: "), line
    assert named in line, line
    with pytest.raises(ValueError, match=re.escape(named)):
        numeric.from_definition(path)


def test_an_unreadable_file_is_one_line(tmp_path, capsys):
    line = _error_line(capsys, ["check", "--definition", str(tmp_path / "none.toml"), "t == t"], 2)
    assert line.endswith("cannot read the file: No such file or directory")
    line = _error_line(capsys, ["--definition", str(tmp_path)], 2)
    assert "cannot read the file" in line


def test_a_name_with_a_newline_cannot_forge_a_line(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(MINIMAL + '[stated]\n"x\\nforged" = "1"\n')
    assert "stated.x\\nforged: not a result" in _error_line(capsys, ["--definition", str(path)], 2)


def test_a_pathological_definition_is_stopped_by_the_time_budget(tmp_path, capsys):
    path = tmp_path / "slow.toml"
    path.write_text(
        'key = "slow"\ntitle = "Slow"\n'
        'output = "x[i] * exp(-r) / ((r + epsilon)**(1/3) + (r + epsilon)**(1/5) + (r + epsilon)**(1/7))**9"\n'
        '[statistics]\nr = "mean(x[j]**2)"\n'
    )
    line = _error_line(capsys, ["--definition", str(path), "--timeout", "0.25"], 1)
    assert line.endswith("slow: not derived within 0.25 s")
    catalog.unregister("slow")  # the command registers, then derives in a child
    with pytest.raises(ValueError, match=r"slow: not derived within 0\.25 s"):
        numeric.from_definition(path, timeout=0.25)
    assert "slow" not in LAYERS  # nothing half-made is registered


# --- the catalog --------------------------------------------------------------


def test_register_refuses_a_built_in_key_and_replaces_its_own(tmp_path, rng):
    with pytest.raises(ValueError, match="built-in"):
        catalog.register(dataclasses.replace(LAYERS["rmsnorm"]))
    first = tmp_path / "first.toml"
    first.write_text(MINIMAL)
    x = rng.standard_normal(4)
    before = numeric.from_definition(first).forward(x, 0.5)
    first.write_text(MINIMAL.replace("sqrt(r + epsilon)", "(r + epsilon)"))
    after = numeric.from_definition(first).forward(x, 0.5)
    np.testing.assert_allclose(after, x / (np.mean(x**2) + 0.5), rtol=1e-14)
    assert not np.allclose(before, after)
    assert catalog.formula("mine.slope_at_zero").expr.rhs == 1 / epsilon


def test_a_statistic_named_like_a_built_in_one_gets_its_symbol_only_where_its_assumptions_hold():
    same = definition.loads(MINIMAL).layer
    assert same.statistics[0].symbol is r
    signed = definition.loads(MINIMAL.replace("mean(x[j]**2)", "mean(x[j]**3)")).layer
    assert signed.statistics[0].symbol is not r
    assert not signed.statistics[0].symbol.is_nonnegative


def test_directions_given_in_the_file_are_used(tmp_path):
    source = EXAMPLE.read_text() + (
        '[[directions]]\nname = "x"\nentry = "x[k]"\nmeaning = "the input x itself"\n'
        '[[directions]]\nname = "complement"\ncomplement = true\nconstraints = ["x[k]**3 * w[k]"]\n'
        'meaning = "every w orthogonal to x**3"\n'
    )
    layer = definition.loads(source).layer
    # J w = w / s for every w orthogonal to x**3 (not to x): the complement is an eigenspace.
    assert quantities.value(layer, "eigen_complement") == (r + epsilon) ** sp.Rational(-1, 4)


# --- directions a file gives: a whole eigen-decomposition of J, proved --------------------


LAYERNORM = (
    'key = "ln"\ntitle = "LN"\noutput = "(x[i] - mu) / sqrt(q + epsilon)"\n'
    '[statistics]\nmu = "mean(x[j])"\nq = "mean((x[j] - mu)**2)"\n'
)
RMSNORM = 'key = "rms"\ntitle = "RMS"\noutput = "x[i] / sqrt(r + epsilon)"\n[statistics]\nr = "mean(x[j]**2)"\n'


def _direction(name: str, entry: str | None = None, constraints: tuple[str, ...] = ()) -> str:
    """One [[directions]] table: an explicit one with ``entry``, else a complement with ``constraints``."""
    if entry is not None:
        return f'[[directions]]\nname = "{name}"\nentry = "{entry}"\n'
    listed = ", ".join(f'"{c}"' for c in constraints)
    return f'[[directions]]\nname = "{name}"\ncomplement = true\nconstraints = [{listed}]\n'


ONES, CENTERED, X = _direction("ones", "1"), _direction("centered", "x[k] - mu"), _direction("x", "x[k]")

# (file content, the start of the one-line error): each once "proved" a bound the built-in layer refutes
# (||J||_2 = eps/s**3 for LayerNorm from 1 and c alone), or stopped with an IndexError.
INCOMPLETE = [
    (LAYERNORM + ONES + CENTERED, "directions: the multiplicities add up to 2, not n"),
    (RMSNORM + X, "directions: the multiplicities add up to 1, not n"),
    (
        LAYERNORM + ONES + CENTERED + _direction("complement", constraints=("w[k]",)),
        'directions[2] "complement": not an eigenspace of J',
    ),
    (
        # w orthogonal to 1 and c is an eigenspace, but of dimension n - 2, not the n - 1 its one partner leaves.
        LAYERNORM + ONES + _direction("complement", constraints=("w[k]", "(x[k] - mu) * w[k]")),
        'directions[1] "complement": 2 constraints for 1 other direction',
    ),
    (
        RMSNORM + _direction("ones", "1") + _direction("complement", constraints=("w[k]",)),
        'directions[0] "ones": not an eigenvector of J',
    ),
    (
        # x and 2x are one direction, not two: their multiplicities would count it twice.
        RMSNORM
        + X
        + _direction("twice", "2 * x[k]")
        + _direction("complement", constraints=("x[k] * w[k]", "2 * x[k] * w[k]")),
        'directions[2] "complement": its constraints do not separate it from the other directions',
    ),
    (
        # At n = 3 the constraint is empty: w is every vector, x among them.  At n = 5, where the
        # one sample input was taken, it separates.
        RMSNORM + X + _direction("complement", constraints=("(n - 3) * x[k] * w[k]",)),
        'directions[1] "complement": its constraints do not separate it from the other directions '
        "(their matrix is singular at n = 3",
    ),
    (
        # Two complements, each an eigenspace: what the others leave is one space, counted once.
        RMSNORM
        + X
        + _direction("complement", constraints=("x[k] * w[k]",))
        + _direction("again", constraints=("x[k] * w[k]",)),
        'directions[2] "again": a second complement; one complement is what the others leave',
    ),
    (
        # At no sampled n: found from the determinant's factor in n.
        RMSNORM + X + _direction("complement", constraints=("(n - 4) * (n - 100) * x[k] * w[k]",)),
        'directions[1] "complement": its constraints do not separate it from the other directions '
        "(their matrix is singular at n = 4",
    ),
]


@pytest.mark.parametrize(("content", "named"), INCOMPLETE)
def test_directions_that_are_not_a_whole_eigen_decomposition_are_one_line_naming_the_field(
    content, named, tmp_path, capsys
):
    path = tmp_path / "incomplete.toml"
    path.write_text(content)
    with pytest.raises(DefinitionError, match="^" + re.escape(named)):
        definition.load(path)
    line = _error_line(capsys, ["check", "--definition", str(path), "norm(J, 2) <= epsilon / s**3"], 2)
    assert line.startswith(f"python -m derivations check: error: {path}: {named}"), line
    with pytest.raises(ValueError, match="^" + re.escape(named)):
        numeric.from_definition(path)


def test_a_whole_eigen_decomposition_given_in_the_file_derives_the_built_in_norm(rng):
    complement = _direction("complement", constraints=("w[k]", "(x[k] - mu) * w[k]"))
    layer = definition.loads(LAYERNORM + ONES + CENTERED + complement).layer
    assert [d.name for d in layer.directions] == ["ones", "centered", "complement"]
    catalog.register(layer)
    x = rng.standard_normal(5)
    found = numeric.facade("ln").spectral_norm(x, 0.25)
    assert found == pytest.approx(np.linalg.norm(numeric.layernorm.jacobian(x, 0.25), 2), rel=1e-12)


@pytest.mark.parametrize("seconds", [0, -0.5, 0.0, 3601, True, "10"])
def test_a_derivation_s_time_limit_is_a_number_of_seconds_in_0_to_3600(seconds):
    layer = definition.loads(MINIMAL).layer
    with pytest.raises(DefinitionError, match=re.escape("timeout must be a number of seconds in (0, 3600]")):
        definition.derive_within(layer, seconds)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_file_that_is_not_a_regular_file_is_one_line_not_a_hang(kind, tmp_path, capsys):
    """A FIFO with no writer blocked the reader for ever; /dev/zero was read up to the cap as NUL bytes."""
    path = Path("/dev/zero")
    if kind == "fifo":
        path = tmp_path / "fifo.toml"
        os.mkfifo(path)
    # Read on a thread given 30 s: a reader that blocks fails here, not at CI's time limit.
    refused: list[str] = []

    def load():
        try:
            definition.load(path)
        except DefinitionError as error:
            refused.append(str(error))

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(30)
    assert not reader.is_alive(), "still reading the file after 30 s"
    assert refused == ["cannot read the file: not a regular file"]
    line = _error_line(capsys, ["check", "--definition", str(path), "t == t"], 2)
    assert line.endswith("cannot read the file: not a regular file"), line


def test_the_hessian_product_of_a_layer_linear_in_x_is_zero(tmp_path, rng):
    """Its derived product is 0, which shows neither dy nor v: it was compiled as taking no vector."""
    path = tmp_path / "scaled.toml"
    path.write_text('key = "scaled"\ntitle = "S"\noutput = "epsilon * x[i]"\n[statistics]\nr = "mean(x[j]**2)"\n')
    layer = numeric.from_definition(path)
    x, g, v = rng.standard_normal((3, 2, 4))
    assert np.array_equal(layer.hvp(x, 0.3, g, v), np.zeros((2, 4)))
    assert np.array_equal(layer.hvp(x[0], 0.3, g[0], v[0]), np.zeros(4))
    with pytest.raises(TypeError, match=r"hvp\(\) takes \(x, epsilon, dy, v\)"):
        layer.hvp(x, 0.3, g)


@pytest.mark.parametrize(
    ("output", "named"),
    [
        # mean(x) has degree 1, so epsilon scales like x and y like x**(1/2): homogeneous, of no integer degree.
        ("x[i] / sqrt(m + epsilon)", "output: homogeneous of degree 1/2 when epsilon scales like x**1; "),
        ("x[i] / (1 + epsilon)", "output: homogeneous for no scaling of epsilon like x**e, e = -1 or 1 .. 8"),
    ],
)
def test_an_output_the_rescaling_cannot_take_is_refused_with_a_true_reason(output, named, tmp_path, capsys):
    """Both were refused as 'no scaling of epsilon makes the output homogeneous', false of the first."""
    path = tmp_path / "degree.toml"
    path.write_text(f'key = "degree"\ntitle = "D"\noutput = "{output}"\n[statistics]\nm = "mean(x[j])"\n')
    line = _error_line(capsys, ["--definition", str(path), "--no-cache"], 1)
    assert named in line
    assert line.count("DefinitionError") == 1, line  # the kind named once, not again for the child's refusal
    with pytest.raises(ValueError, match=re.escape(named)):
        numeric.from_definition(path)


SCALED = 'key = "scaled"\ntitle = "S"\noutput = "epsilon * x[i]"\n[statistics]\nr = "mean(x[j]**2)"\n'
SQUARED = SCALED.replace('output = "epsilon * x[i]"', 'output = "epsilon**2 * x[i] / (r + epsilon)"')
DAMPED = (
    'key = "damped"\ntitle = "D"\noutput = "x[i] * sqrt(epsilon) / (r + epsilon)"\n[statistics]\nr = "mean(x[j]**2)"\n'
)


@pytest.mark.parametrize(
    ("source", "function", "arguments", "expected"),
    [
        # epsilon / m**2 underflows at m = 1e200: the rescaled epsilon * x was 0.
        (SCALED, "forward", (np.array([-1e200, 0.0, 1e200]), 0.3), np.array([-3e199, 0.0, 3e199])),
        (SCALED, "slope", (1e200, 0.3), 0.3),
        (SCALED, "response", (1e200, 0.3), 3e199),
        # (2 t**2 / 3 + epsilon)**2 underflows at t = 1e-100 unscaled: the slope was 0/0.
        (DAMPED, "slope", (1e-100, 1e-250), -1.5e75),
        # epsilon / M**2 = 3e-201 is normal, but its square underflowed: 0 where the truth is 1.35e-101.
        (SQUARED, "forward", (np.array([-1e100, 0.0, 1e100]), 0.3), np.array([-1.35e-101, 0.0, 1.35e-101])),
        (SQUARED, "spectral_norm", (np.array([-1e100, 0.0, 1e100]), 0.3), 1.35e-201),
        # mean(epsilon**2 x**2) = 0.09 * 2e200 / 3: it gave 0.
        (SCALED, "second_moment", (np.array([-1e100, 0.0, 1e100]), 0.3), 6e198),
    ],
)
def test_a_user_layer_is_right_where_its_true_value_is_a_normal_float(source, function, arguments, expected, tmp_path):
    path = tmp_path / "layer.toml"
    path.write_text(source)
    layer = numeric.from_definition(path)
    np.testing.assert_allclose(getattr(layer, function)(*arguments), expected, rtol=1e-13)


def test_a_pattern_of_two_values_without_a_coordinate_takes_the_last_one():
    """The default coordinate is the third, or the last of a pattern with fewer values."""
    source = MINIMAL + '[[patterns]]\nvalues = ["-t", "2*t"]\n'
    layer = definition.loads(source).layer
    (pattern,) = layer.patterns
    assert pattern.coordinate == 1
    # The response is output coordinate 1, 2t / sqrt(r + epsilon) with r = (t**2 + 4 t**2) / 2.
    assert sp.simplify(layer.on_pattern(pattern) - 2 * t / sp.sqrt(sp.Rational(5, 2) * t**2 + epsilon)) == 0
    # The same as the coordinate written out.
    written = definition.loads(source.replace('"2*t"]\n', '"2*t"]\ncoordinate = 1\n')).layer.patterns[0]
    assert (written.values, written.coordinate) == (pattern.values, pattern.coordinate)
    # A suffix names the pattern's quantities: at most 20 characters (docs/definitions.md).
    longest = "_" + "a" * 19
    second = f'{source}[[patterns]]\nvalues = ["t", "t"]\nsuffix = "{longest}"\n'
    assert definition.loads(second).layer.patterns[1].suffix == longest


@pytest.mark.parametrize("function", ["jacobian", "eigenvalues", "spectral_norm", "vjp", "jvp"])
def test_a_user_layers_derivatives_are_right_where_epsilon_scaled_to_the_input_underflows(function, tmp_path):
    """y = epsilon * x at |x| = 1e200: epsilon / M**2 underflowed to 0, and every derivative was 0."""
    path = tmp_path / "layer.toml"
    path.write_text(SCALED)
    layer = numeric.from_definition(path)
    x, g = np.array([-1e200, 0.0, 1e200]), np.array([1.0, -2.0, 3.0])
    expected = {
        "jacobian": 0.3 * np.eye(3),
        "eigenvalues": np.full(3, 0.3),
        "spectral_norm": 0.3,
        "vjp": 0.3 * g,
        "jvp": 0.3 * g,
    }[function]
    got = getattr(layer, function)(x, 0.3, *((g,) if function in ("vjp", "jvp") else ()))
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)
    # In a batch, beside a row of moderate scale (each row at its own scale).
    batch = np.stack([x, np.array([1.0, -2.0, 0.5])])
    got = getattr(layer, function)(batch, 0.3, *((g,) if function in ("vjp", "jvp") else ()))
    np.testing.assert_allclose(got, np.stack([expected, expected]), rtol=1e-13, atol=0)


@pytest.mark.parametrize("scale", [1e-130, 1e-100, 1e100, 1e130])
@pytest.mark.parametrize("function", ["jacobian", "eigenvalues", "spectral_norm", "vjp", "jvp"])
def test_a_user_layers_derivatives_scale_as_the_definition_does(function, scale, tmp_path):
    """y = x sqrt(epsilon) / (r + epsilon) is unchanged by x -> s x, epsilon -> s**2 epsilon, so its
    derivatives in x scale by 1/s: at every scale whose epsilon is a normal float they must (to
    rounding relative to the largest entry: an entry far below it, as J's off-diagonal where
    epsilon >> r, carries that rounding)."""
    path = tmp_path / "layer.toml"
    path.write_text(DAMPED)
    layer = numeric.from_definition(path)
    rng = np.random.default_rng(7)
    u, g = rng.normal(size=4), rng.normal(size=4)
    vectors = (g,) if function in ("vjp", "jvp") else ()
    for eps in (1e-30, 0.3, 1e30):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = getattr(layer, function)(scale * u, eps * scale**2, *vectors)
        expected = getattr(layer, function)(u, eps, *vectors) / scale
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13 * np.max(np.abs(expected)))


def test_a_definition_holds_at_most_four_patterns_and_four_constraints_per_complement():
    """The bounds docs/definitions.md states: four of each are read, a fifth is refused by name."""
    text = docs_words("definitions.md")
    assert "at most 4 patterns" in text
    assert "at most 4 `constraints`" in text
    pattern = '[[patterns]]\nvalues = ["-t", "0", "t"]\n'
    assert len(definition.loads(MINIMAL + pattern * 4).layer.patterns) == 4
    with pytest.raises(ValueError, match=r"^patterns: must be an array of 1 to 4 tables"):
        definition.loads(MINIMAL + pattern * 5)

    def complement(count: int) -> str:
        return RMSNORM + X + _direction("complement", constraints=tuple(f"x[k]**{j} * w[k]" for j in range(count)))

    # Four are read (and then found to leave the wrong dimension); a fifth is refused as too many.
    with pytest.raises(ValueError, match=r"4 constraints for 1 other direction"):
        definition.loads(complement(4))
    with pytest.raises(ValueError, match=r"constraints: must be an array of at most 4 expressions"):
        definition.loads(complement(5))


def test_a_definition_holds_at_most_six_directions():
    """docs/definitions.md's bound: six directions are read (and then checked, here the second found
    no eigenvector), a seventh is refused before any is."""
    assert "optional, at most 6 candidate eigenvectors" in docs_words("definitions.md")

    def directions(count: int) -> str:
        return RMSNORM + "".join(_direction(f"d{m}", f"x[k]**{m + 1}") for m in range(count))

    with pytest.raises(ValueError, match=r'^directions\[1\] "d1": not an eigenvector of J'):
        definition.loads(directions(6))
    with pytest.raises(ValueError, match=r"^directions: must be an array of 1 to 6 tables"):
        definition.loads(directions(7))


def test_a_definitions_directions_are_proved_within_the_time_the_docs_state(monkeypatch):
    """docs/definitions.md's bound on proving the directions an eigen-decomposition: the child
    that proves them gets that many seconds, and running out of them is the refusal it names."""
    from derivations.claims import bounded

    stated = re.search(r"eigen-decomposition of J in a child process within (\d+) s", docs_words("definitions.md"))
    assert stated is not None
    given = []

    def run(function, seconds, *args, **kwargs):
        given.append(seconds)
        raise bounded.Exceeded(f"not done within {seconds:g} s")

    monkeypatch.setattr(bounded, "run", run)
    with pytest.raises(ValueError, match=r"^directions: not proved eigenvectors of J: not done within"):
        definition.loads(RMSNORM + _direction("d0", "x[k]"))
    assert given == [float(stated.group(1))]


def test_a_definition_holds_at_most_eight_statistics():
    """docs/definitions.md's bound: eight statistics are read, a ninth is refused naming the count."""
    assert "required, at most 8, in order" in docs_words("definitions.md")

    def with_statistics(count: int) -> str:
        extra = [f"a{p}" for p in range(3, 3 + count - 1)]
        output = " + ".join(["x[i] / sqrt(r + epsilon)", *extra])
        means = "".join(f'{name} = "mean(x[j]**{name[1:]})"\n' for name in extra)
        return MINIMAL.replace('output = "x[i] / sqrt(r + epsilon)"', f'output = "{output}"') + means

    read = definition.loads(with_statistics(8)).layer
    assert {"r", "a3", "a9"} <= {str(stat.symbol) for stat in read.statistics}
    with pytest.raises(ValueError, match=r"^statistics: at most 8 are accepted; got 9$"):
        definition.loads(with_statistics(9))


def test_the_kink_names_the_entry_its_pattern_picks_as_the_response_does(tmp_path):
    """A clamped layer's pattern read at its second entry (coordinate 1): the kink's one-sided
    slopes are of u_2, the entry the response and slope name, not u_1."""
    path = tmp_path / "second.toml"
    path.write_text(
        CLAMPED.read_text(encoding="utf-8")
        .replace('"l2norm_clamped_toml"', '"l2norm_clamped_second"')
        .replace('values = ["-t", "0", "t"]', 'values = ["0", "t", "-t"]\ncoordinate = 1')
    )
    catalog.register(definition.load(path).layer)
    latex = {f.name: f.latex() for f in catalog.formulas("l2norm_clamped_second")}
    assert "u_{2}" in latex["response"]
    assert "u_{2}" in latex["kink"]
    assert "u_{1}" not in latex["kink"] + latex["response"]


@pytest.mark.parametrize("term", ["abs(exp(t))", "max(exp(t), 1)", "exp(abs(t))", "sqrt(exp(t))", "tanh(exp(t))"])
def test_a_definition_term_refuses_exp_of_exp_and_only_that(term):
    """exp() of exp() is refused; every other function of an exp, and exp of another function, is
    read."""
    from derivations.claims.language import parse_term

    t = sp.Symbol("t", real=True)
    assert parse_term(term, {"t": t}).has(sp.exp)
    with pytest.raises(ValueError, match=r"^exp\(\) of exp\(\) at column 1 is not supported$"):
        parse_term("exp(exp(t))", {"t": t})


@pytest.mark.parametrize("as_text", [True, False])
def test_a_definition_keeps_its_file_as_a_path_whether_named_by_text_or_by_path(as_text):
    """definition.load takes a file name as text or as a path, and keeps it as a Path beside the
    bytes it read (what the cache keys on)."""
    source = Path(__file__).parent / "definitions" / "rmsnorm.toml"
    found = definition.load(str(source) if as_text else source)
    assert isinstance(found.path, Path)
    assert found.path == source
    assert found.source == source.read_bytes()


def test_the_time_budget_of_a_definition_is_the_300_s_the_docs_state_in_python_and_on_the_command_line(capsys):
    """docs/definitions.md: `--timeout`, default 300 s, and `numeric.from_definition(path,
    timeout=300)`: the defaults of both are that budget."""
    import inspect

    words = docs_words("definitions.md")
    assert "(`--timeout`, default 300 s)" in words
    assert "timeout=300)`" in words
    assert inspect.signature(numeric.from_definition).parameters["timeout"].default == 300
    from derivations.__main__ import _parser

    parser, _ = _parser()
    assert parser.get_default("timeout") == 300
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "time budget (default: 300)" in " ".join(capsys.readouterr().out.split())
