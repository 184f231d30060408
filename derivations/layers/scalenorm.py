r"""ScaleNorm (Nguyen & Salazar 2019): one scalar gain times x / max(||x||_2, epsilon).

.. math:: y = g\, \frac{x}{\max(\|x\|_2, \varepsilon)}.

The paper writes g x / ||x||, the clamp on the norm keeping it finite; the
reference code clamps as ``torch.nn.functional.normalize`` does.  The gain is
one real number for every entry, so J = g J_{l2} stays symmetric and its
eigenvalues are g times those of `derivations.layers.l2norm_clamped`, |g| times for
the norm.
"""

import sympy as sp

from derivations.derive.regimes import scaled
from derivations.derive.sums import mean
from derivations.layers import l2norm_clamped
from derivations.layers.l2norm_clamped import by_regime, on_pattern
from derivations.symbols import epsilon, g, g_s, j, k, n, norm_x, t, x

_x = sp.MatrixSymbol("x", n, 1)
_PAIR = sp.sqrt(2) * sp.Abs(t)

LAYER = scaled(
    l2norm_clamped.LAYER,
    key="scalenorm",
    title="ScaleNorm: one scalar gain, epsilon a floor on the norm",
    gain=g_s,
    used_by=("ScaleNorm (Nguyen & Salazar 2019), its code: `x * (g / norm(x).clamp(min=eps))`",),
    stated={
        "response": on_pattern(g_s * t / epsilon, g_s * t / (sp.sqrt(2) * sp.Abs(t)), _PAIR, closed=True),
        "slope": on_pattern(g_s / epsilon, sp.Integer(0), _PAIR, closed=False),
        "slope_at_zero": g_s / epsilon,
        "asymptote": g_s / sp.sqrt(2),
        "kink": epsilon / sp.sqrt(2),
        "slope_below_kink": g_s / epsilon,
        "slope_above_kink": sp.Integer(0),
        "jacobian": by_regime(g_s * sp.Identity(n) / epsilon, g_s * (sp.Identity(n) / norm_x - _x * _x.T / norm_x**3)),
        "jacobian_jump": -g_s * _x * _x.T / epsilon**3,
        "eigen_x": by_regime(g_s / epsilon, sp.Integer(0)),
        "eigen_complement": by_regime(g_s / epsilon, g_s / norm_x),
        "spectral_norm": by_regime(sp.Abs(g_s) / epsilon, sp.Abs(g_s) / norm_x),
        "spectral_bound": sp.Abs(g_s) / epsilon,
        "second_moment": sp.Piecewise((g_s**2 * norm_x**2 / (n * epsilon**2), norm_x <= epsilon), (g_s**2 / n, True)),
        "vjp": by_regime(g_s * g[k] / epsilon, g_s * (g[k] - x[k] * n * mean(g[j] * x[j], j) / norm_x**2) / norm_x),
    },
)
