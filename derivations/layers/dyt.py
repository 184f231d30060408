r"""Dynamic Tanh (Zhu, Chen, He, LeCun & Liu, "Transformers without Normalization", 2025).

.. math:: \mathrm{DyT}(x) = \gamma \odot \tanh(\alpha x) + \beta.

Offered as a drop-in replacement for LayerNorm, it computes no statistic and
has no epsilon: one learnable scalar alpha (initialized to alpha_0 = 0.5 in
the paper) sets the length scale 1/alpha that epsilon sets elsewhere.  It is
the affine wrapper (`derivations.derive.affine`) over the elementwise base
tanh(alpha x_i) (`derivations.derive.elementwise`): every entry is mapped alone, so
J is diagonal, gamma_k alpha sech^2(alpha x_k) on the diagonal, symmetric,
with the coordinate vectors as eigenvectors, and the slope at zero is
gamma alpha whatever the input's spread.
"""

import sympy as sp

from derivations.core.layer import Pattern
from derivations.derive.elementwise import COORDINATE, NO_SPREAD, Diagonal, Elementwise, Largest, elementwise_affine
from derivations.symbols import alpha, beta, g, gamma, gamma_max, i, k, t, v, x

_PATTERN = Pattern((-t, sp.Integer(0), t), coordinate=2)


def _sech2(at: sp.Expr) -> sp.Expr:
    return sp.sech(alpha * at) ** 2


BASE = Elementwise(
    key="dyt_base",
    title="Dynamic Tanh without gain and bias: tanh(alpha x), entry by entry",
    statistics=(),
    output=sp.tanh(alpha * x[i]),
    patterns=(_PATTERN,),
    directions=(COORDINATE,),
    display=(),
    spread=NO_SPREAD,
    parameter=alpha,
    name="alpha",
    stated={
        "response": sp.tanh(alpha * t),
        "slope": alpha * _sech2(t),
        "slope_at_zero": alpha,
        "asymptote": sp.sign(alpha),
        "jacobian": Diagonal(alpha * _sech2(x[k])),
        "eigen_coordinate": alpha * _sech2(x[k]),
        "spectral_norm": sp.Abs(alpha) * Largest(_sech2(x[k])),
        "spectral_bound": sp.Abs(alpha),
        "vjp": alpha * _sech2(x[k]) * g[k],
    },
)

LAYER = elementwise_affine(
    BASE,
    key="dyt",
    title="Dynamic Tanh: gain times tanh(alpha x) plus bias, no statistics and no epsilon",
    used_by=(
        'Dynamic Tanh ("Transformers without Normalization", Zhu, Chen, He, LeCun & Liu 2025): '
        "`gamma * tanh(alpha * x) + beta`, alpha a learnable scalar (alpha_0 = 0.5)",
    ),
    stated={
        "response": gamma[2] * sp.tanh(alpha * t) + beta[2],
        "slope": gamma[2] * alpha * _sech2(t),
        "slope_at_zero": gamma[2] * alpha,
        "asymptote": beta[2] + gamma[2] * sp.sign(alpha),
        "constant_response": gamma[i] * sp.tanh(alpha * t) + beta[i],
        "jacobian": Diagonal(gamma[k] * alpha * _sech2(x[k])),
        "eigen_coordinate": gamma[k] * alpha * _sech2(x[k]),
        "spectral_norm": sp.Abs(alpha) * Largest(sp.Abs(gamma[k]) * _sech2(x[k])),
        "spectral_bound": sp.Abs(alpha) * gamma_max,
        # The chain rule entry by entry: what an autograd backward computes.
        "vjp": gamma[k] * alpha * _sech2(x[k]) * g[k],
        "jvp": gamma[k] * alpha * _sech2(x[k]) * v[k],
        "hvp": -2 * alpha**2 * gamma[k] * sp.tanh(alpha * x[k]) * _sech2(x[k]) * g[k] * v[k],
        "dgain": g[k] * sp.tanh(alpha * x[k]),
        "dbias": g[k],
    },
)
