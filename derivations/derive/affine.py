r"""A learnable gain and bias over any layer: :math:`y = \gamma \odot \mathrm{base}(x) + \beta`.

The wrapper owns what the gain changes.  Its Jacobian is diag(gamma) J_base,
its input gradient is the base's for the upstream gradient gamma * g (entry by entry) (all proved),
proved entry by entry; that matrix is not symmetric, so its norm is bounded
through :math:`\|\mathrm{diag}(\gamma) J\| \le \max_i |\gamma_i|\,\|J\|`
rather than read off eigenvalues.  Everything else (the response, the slope,
the eigenvectors that survive the gain) goes through the generic machinery.

>>> from derivations import LAYERS
>>> from derivations.derive.spectral import bound_value
>>> bound_value(LAYERS["rmsnorm_affine"])
gamma_max/sqrt(epsilon)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import sympy as sp

from derivations.cache import derived
from derivations.core.formula import Established, Formula
from derivations.core.layer import Layer
from derivations.core.proof import equal
from derivations.derive import backward, jacobian, spectral
from derivations.symbols import beta, diag_gamma, g, gamma, gamma_max, i, k, norm_J


@dataclass(frozen=True, eq=False)
class Affine(Layer):
    """``base`` scaled entry-wise by gain[i], plus bias[i]; build it with `affine`."""

    base: Layer = field(kw_only=True)

    @property
    def parameters(self) -> tuple[tuple[str, sp.IndexedBase], ...]:
        return (("gain", gamma), ("bias", beta))

    @property
    def named_symbols(self) -> dict[str, sp.Expr]:
        # The gain and bias at the patterns' coordinate, and the largest |gain|.
        coordinate = self.patterns[0].coordinate
        return {"gamma": gamma[coordinate], "beta": beta[coordinate], "gamma_max": gamma_max}

    @property
    def requires(self) -> tuple[Layer, ...]:
        return (self.base,)


def affine(
    base: Layer,
    key: str,
    title: str,
    stated: Mapping[str, sp.Basic] | None = None,
    used_by: tuple[str, ...] = (),
) -> Affine:
    """The layer ``gain * base + bias``, with the base's statistics, patterns and directions.

    The base's directions are candidates: those the gain keeps as
    eigenvectors (eigenvalue 0) are found by the eigen derivation.
    """
    return Affine(
        key=key,
        title=title,
        statistics=base.statistics,
        output=gamma[i] * base.output + beta[i],
        patterns=base.patterns,
        directions=base.directions,
        display=base.display,
        spread=base.spread,
        approach=base.approach,
        stated=dict(stated or {}),
        notes=base.notes,
        used_by=used_by,
        base=base,
    )


@derived
def factorization(layer: Affine) -> str:
    """Prove J = diag(gain) J_base entry by entry: J_ik = gain_i (J_base)_ik."""
    how = equal(
        jacobian.entry(layer), gamma[i] * jacobian.entry(layer.base), f"{layer.key}.jacobian = diag(gain) J_base"
    )
    return f"J = diag(gain) J_{layer.base.key}: {how}"


@jacobian.matrix_form.register
def _(layer: Affine) -> sp.MatrixExpr:
    factorization(layer)  # J = diag(gain) J_base, proved before it is shown
    return sp.MatMul(diag_gamma, jacobian.matrix_form(layer.base))


@jacobian.proof.register
def _(layer: Affine, name: str) -> str:
    # A stated J is proved entry by entry as any layer's is, after the factorization.
    stated = jacobian.proof.dispatch(Layer)(layer, name)
    return _with(factorization(layer), stated)


@spectral.bound_value.register
def _(layer: Affine) -> sp.Expr:
    return gamma_max * spectral.bound_value(layer.base)


@spectral.bound_formula.register
def _(layer: Affine, _: object, name: str) -> Formula:
    top = spectral.bound_value(layer)
    shown, proof = layer.proved(name, top)
    return Formula(
        name,
        "Bound on the spectral norm of the non-symmetric J = diag(gamma) J_base: "
        "||diag(gamma) J_base|| <= ||diag(gamma)|| ||J_base|| = max|gamma_i| ||J_base||.",
        sp.Le(norm_J, top),
        ("epsilon > 0", "n >= 2", "gamma real"),
        Established.ALL_N,
        f"{factorization(layer)}; submultiplicativity; {layer.base.key}.{name}",
        proof,
        layer.key,
        sp.Le(norm_J, shown),
    )


def _with(proof: str, stated: str) -> str:
    return "; ".join(filter(None, [proof, stated and f"the stated form: {stated}"]))


@backward.vjp_proof.register
def _(layer: Affine, name: str) -> str:
    # The gain multiplies the upstream gradient before the base's backward pass.
    scaled = backward.times_entrywise(backward.vjp(layer.base), g, gamma)
    how = equal(backward.vjp(layer), scaled, f"{layer.key}.{name} = J_base^T (gain g)")
    stated = backward.prove_stated(layer, name, backward.vjp(layer))
    return _with(f"J^T g = J_{layer.base.key}^T (gain * g): {how}", stated)


@backward.jvp_proof.register
def _(layer: Affine, name: str) -> str:
    how = equal(backward.jvp(layer), gamma[k] * backward.jvp(layer.base), f"{layer.key}.{name} = gain J_base v")
    return _with(f"J v = gain * J_{layer.base.key} v: {how}", backward.prove_stated(layer, name, backward.jvp(layer)))


@backward.hvp_proof.register
def _(layer: Affine, name: str) -> str:
    scaled = backward.times_entrywise(backward.hvp(layer.base), g, gamma)
    how = equal(backward.hvp(layer), scaled, f"{layer.key}.{name} = H_base(gain g) v")
    # A stated H is proved too; only then is it what is printed.
    stated = backward.prove_stated(layer, name, backward.hvp(layer))
    proved = f"H(g) = H_{layer.base.key}(gain * g): {how}" + (f"; H as stated: {stated}" if stated else "")
    return f"{proved}; {backward.symmetry(layer)}"


@backward.gradient_proof.register
def _(layer: Affine, parameter: sp.IndexedBase, name: str) -> str:
    # y_i = gain_i base_i + bias_i: each parameter's entry k reaches y_k alone.
    direct = {gamma: g[k] * layer.base.output.xreplace({i: k}), beta: g[k]}[parameter]
    how = equal(backward.parameter_gradient(layer, parameter), direct, f"{layer.key}.{name}")
    stated = backward.prove_stated(layer, name, backward.parameter_gradient(layer, parameter))
    return _with(f"= g_k d y_k / d {parameter.label}_k: {how}", stated)
