r"""L2 normalization with epsilon as a floor on the norm (``torch.nn.functional.normalize``).

.. math:: y = \frac{x}{\max(\|x\|_2, \varepsilon)}, \qquad \|x\|_2 = \sqrt{n\, r}, \quad r = \overline{x^2}.

PyTorch computes ``x / x.norm(p, dim, keepdim=True).clamp_min(eps)``.  Two
regimes (`derivations.derive.regimes`): above the floor the output is x / ||x||,
scale-free, with slope 0 along x; below it the layer is linear, x / epsilon.
On ||x||_2 = epsilon the output is continuous and the Jacobian does not exist.
"""

import sympy as sp

from derivations.core.layer import Pattern, Statistic
from derivations.derive.regimes import cases, clamped
from derivations.derive.sums import mean
from derivations.layers.rmsnorm import RAW_DIRECTIONS, UNIFORM
from derivations.symbols import epsilon, g, i, j, k, n, norm_x, r, t, x

_x = sp.MatrixSymbol("x", n, 1)

# The two regimes as the statements write them.
INSIDE, OUTSIDE = sp.StrictLessThan(norm_x, epsilon), sp.StrictGreaterThan(norm_x, epsilon)

STATISTICS = (
    Statistic(r, x[j] ** 2, "mean of the squared entries"),
    Statistic(norm_x, sp.sqrt(n * r), "Euclidean norm ||x||_2", mean=False),
)
PATTERNS = (Pattern((-t, sp.Integer(0), t), coordinate=2), UNIFORM)


def by_regime(inside: sp.Basic, outside: sp.Basic) -> sp.Basic:
    """A derivative stated in each open regime; on ||x||_2 = epsilon it does not exist."""
    return cases((inside, INSIDE), (outside, OUTSIDE))


def on_pattern(inside: sp.Expr, outside: sp.Expr, norm: sp.Expr, closed: bool) -> sp.Piecewise:
    """A result on an input pattern whose norm is ``norm``: continuous (``closed``) or on the open regimes."""
    if closed:
        return sp.Piecewise((inside, norm <= epsilon), (outside, True))
    return sp.Piecewise((inside, norm < epsilon), (outside, norm > epsilon))


# ||(-t, 0, t)|| = sqrt(2) |t| and ||(t, t, t)|| = sqrt(3) |t|.
_PAIR, _TRIPLE = sp.sqrt(2) * sp.Abs(t), sp.sqrt(3) * sp.Abs(t)

LAYER = clamped(
    key="l2norm_clamped",
    title="L2 normalization, epsilon a floor on the norm",
    statistics=STATISTICS,
    definition=x[i] / sp.Max(norm_x, epsilon),
    patterns=PATTERNS,
    directions=RAW_DIRECTIONS,
    used_by=("PyTorch `F.normalize` (p = 2): `x / x.norm(p, dim, keepdim=True).clamp_min(eps)`",),
    stated={
        "response": on_pattern(t / epsilon, t / (sp.sqrt(2) * sp.Abs(t)), _PAIR, closed=True),
        "slope": on_pattern(1 / epsilon, sp.Integer(0), _PAIR, closed=False),
        "slope_at_zero": 1 / epsilon,
        "asymptote": 1 / sp.sqrt(2),
        "kink": epsilon / sp.sqrt(2),
        "slope_below_kink": 1 / epsilon,
        "slope_above_kink": sp.Integer(0),
        "response_uniform": on_pattern(t / epsilon, t / (sp.sqrt(3) * sp.Abs(t)), _TRIPLE, closed=True),
        "slope_at_zero_uniform": 1 / epsilon,
        "kink_uniform": epsilon / sp.sqrt(3),
        # Outside the floor, the projection off x scaled by 1/||x||; inside, I / epsilon.
        "jacobian": by_regime(sp.Identity(n) / epsilon, sp.Identity(n) / norm_x - _x * _x.T / norm_x**3),
        "jacobian_jump": -_x * _x.T / epsilon**3,
        "eigen_x": by_regime(1 / epsilon, sp.Integer(0)),
        "eigen_complement": by_regime(1 / epsilon, 1 / norm_x),
        "spectral_norm": by_regime(1 / epsilon, 1 / norm_x),
        "spectral_bound": 1 / epsilon,
        "second_moment": sp.Piecewise((norm_x**2 / (n * epsilon**2), norm_x <= epsilon), (1 / n, True)),
        # As autograd's normalize backward reads: (g - y <y, g>) / ||x|| outside, g / epsilon inside.
        "vjp": by_regime(g[k] / epsilon, (g[k] - x[k] * n * mean(g[j] * x[j], j) / norm_x**2) / norm_x),
    },
)
