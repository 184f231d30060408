r"""RMSNorm with epsilon added outside the square root.

.. math:: y = \frac{x}{\sigma + \varepsilon}, \qquad \sigma = \sqrt{\overline{x^2}}.

The convention of the RMSNorm authors' reference code.  sigma is not
differentiable at x = 0; the output still is, because x * sigma is of second
order there.
"""

import sympy as sp

from derivations.core.layer import Layer, Pattern, Statistic
from derivations.derive.sums import mean
from derivations.layers.rmsnorm import RAW_DIRECTIONS, UNIFORM
from derivations.symbols import epsilon, g, i, j, k, n, r, sigma, t, tau, x

_x = sp.MatrixSymbol("x", n, 1)

LAYER = Layer(
    key="rmsnorm_eps_outside",
    title="RMSNorm, epsilon added outside the square root",
    statistics=(
        Statistic(r, x[j] ** 2, "mean of the squared entries"),
        Statistic(sigma, sp.sqrt(r), "root mean square", mean=False),
    ),
    output=x[i] / (sigma + epsilon),
    patterns=(Pattern((-t, sp.Integer(0), t), coordinate=2), UNIFORM),
    directions=RAW_DIRECTIONS,
    display=(),
    spread=sigma,
    used_by=("the RMSNorm authors' reference code: `x / (norm(x) / sqrt(d) + eps)`",),
    approach={x[i]: tau * x[i], x[k]: tau * x[k], sigma: tau * sigma},
    stated={
        "response": t / (sp.sqrt(sp.Rational(2, 3)) * sp.Abs(t) + epsilon),
        "slope": epsilon / (sp.sqrt(sp.Rational(2, 3)) * sp.Abs(t) + epsilon) ** 2,
        "slope_at_zero": 1 / epsilon,
        "slope_at_zero_uniform": 1 / epsilon,
        "response_uniform": t / (sp.Abs(t) + epsilon),
        "eigen_x": epsilon / (sigma + epsilon) ** 2,
        "eigen_complement": 1 / (sigma + epsilon),
        "spectral_norm": 1 / (sigma + epsilon),
        "spectral_bound": 1 / epsilon,
        # d sigma / dx = x / (n sigma): dx = g / (sigma + epsilon) - mean(g x) x / (sigma (sigma + epsilon)**2).
        "vjp": g[k] / (sigma + epsilon) - mean(g[j] * x[j], j) * x[k] / (sigma * (sigma + epsilon) ** 2),
    },
    notes={"slope_at_zero": "; sigma has a kink there, the output does not"},
)
