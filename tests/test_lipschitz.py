"""``lipschitz``: the Lipschitz constant in the 2-norm, sup over inputs of ||J||_2, derived for claims.

It is derived from the spectral norm (a function of the input's statistics): the bound over all
inputs is shown tight, the norm tending to it at the degenerate input in every case of n.  So it
equals ``spectral_bound`` wherever a layer has it, and a layer whose bound is not such a supremum
(a per-feature gain's gamma_max / sqrt(epsilon)) has none.
"""

import pytest
import sympy as sp

import numeric
from derivations import LAYERS, formulas, quantities
from derivations.claims import Claim, check
from derivations.core.proof import DerivationError
from derivations.derive import spectral
from derivations.symbols import epsilon

NAME = "lipschitz"
# The layers J is symmetric for, whose spectral norm is derived: each has the constant.
WITH = {
    "layernorm": 1 / sp.sqrt(epsilon),
    "layernorm_std_eps": 1 / epsilon,
    "layernorm_std_eps_biased": 1 / epsilon,
    "rmsnorm": 1 / sp.sqrt(epsilon),
    "rmsnorm_eps_outside": 1 / epsilon,
    "groupnorm": 1 / sp.sqrt(epsilon),
    "batchnorm_train": 1 / sp.sqrt(epsilon),
    "l2norm_clamped": 1 / epsilon,
}
# A gain makes J = diag(gamma) J' not symmetric: gamma_max / sqrt(epsilon) bounds its norm, and
# is no supremum for each gain (n = 2, gamma = (1, 0): 1 / sqrt(2 epsilon)).
WITHOUT = ("layernorm_affine", "rmsnorm_affine", "rmsnorm_gemma", "prmsnorm")


@pytest.mark.parametrize(("key", "value"), list(WITH.items()))
def test_the_constant_is_the_supremum_of_the_spectral_norm(key, value):
    layer = LAYERS[key]
    assert sp.simplify(quantities.value(layer, NAME) - value) == 0
    assert quantities.value(layer, NAME) == quantities.value(layer, "spectral_bound")


@pytest.mark.parametrize("key", WITHOUT)
def test_a_layer_whose_bound_is_no_supremum_has_no_constant(key):
    with pytest.raises(quantities.NotApplicable, match=f"{key} has no {NAME}"):
        quantities.value(LAYERS[key], NAME)


def test_each_case_of_n_tends_to_the_constant():
    """std-eps: eps / (eps + sigma)**2 at n = 2 and 1 / (eps + sigma) for n >= 3, both 1/eps as sigma -> 0."""
    layer = LAYERS["layernorm_std_eps"]
    norm = spectral.spectral_norm(layer)
    assert isinstance(norm, sp.Piecewise)
    assert len(norm.args) == 2
    assert quantities._near_degenerate(layer, norm) == [1 / epsilon, 1 / epsilon]


def test_it_is_derived_not_read_from_the_bound(monkeypatch):
    """A bound over all inputs that the spectral norm does not reach is refused, not passed on."""
    layer = LAYERS["rmsnorm"]
    derive = quantities._lipschitz.__wrapped__
    assert derive(layer) == 1 / sp.sqrt(epsilon)
    monkeypatch.setattr(spectral, "bound_value", lambda layer: 2 / sp.sqrt(epsilon))
    with pytest.raises(DerivationError, match="not provably equal"):
        derive(layer)


def test_it_is_a_claim_name_and_no_printed_row():
    layer = LAYERS["rmsnorm"]
    assert NAME in quantities.names(layer)
    assert NAME not in quantities.values(layer)  # no homogeneity degree, no printed row
    assert all(f.name != NAME for f in formulas("rmsnorm"))
    assert NAME not in dir(numeric.rmsnorm)
    assert quantities.left_out(layer) == []


@pytest.mark.parametrize(
    ("text", "key", "assumptions", "verdict"),
    [
        ("lipschitz == 1/sqrt(epsilon)", "rmsnorm", (), "proved"),
        ("lipschitz <= 1/sqrt(epsilon)", "rmsnorm", (), "proved"),
        ("lipschitz == spectral_bound", "layernorm", (), "proved"),
        ("lipschitz == spectral_bound", "layernorm_std_eps", (), "proved"),
        ("spectral_norm <= lipschitz", "layernorm", (), "proved"),
        ("spectral_norm <= lipschitz", "layernorm_std_eps", ("n == 2",), "proved"),
        ("lipschitz == 1/sqrt(epsilon)", "layernorm_std_eps", (), "refuted"),
        ("lipschitz == 1/sqrt(epsilon)", "rmsnorm_eps_outside", (), "refuted"),
        ("lipschitz == 1/epsilon", "layernorm_std_eps", ("n == 2",), "proved"),
        ("lipschitz == abs(alpha) * gamma_max", "dyt", (), "proved"),
        ("lipschitz <= gamma_max/sqrt(epsilon)", "layernorm_affine", (), "error"),
    ],
)
def test_claims_about_the_constant(text, key, assumptions, verdict):
    found = check(Claim(text, key, assumptions))
    assert found.verdict == verdict, found.detail
    if verdict == "error":
        assert f"{key} has no {NAME}" in found.detail
