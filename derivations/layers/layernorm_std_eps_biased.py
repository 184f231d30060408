r"""LayerNorm with epsilon added to the biased standard deviation.

.. math:: y = \frac{x - \bar{x}\,\mathbf{1}}{\sigma_b + \varepsilon},
   \qquad \sigma_b = \sqrt{q}.

The convention of several graph and vision codebases, which write
``(x - x.mean(-1)) / (x.std(-1, unbiased=False) + eps)``.  It differs from
`derivations.layers.layernorm_std_eps` only by Bessel's factor in the standard
deviation, which moves every result that involves sigma by sqrt(n/(n-1)).
sigma_b is not differentiable at a constant input; the output still is.
"""

import sympy as sp

from derivations.core.layer import Layer, Pattern, Statistic
from derivations.derive.sums import mean
from derivations.layers.layernorm import CENTERED_DIRECTIONS, CENTERED_STATISTICS
from derivations.symbols import c, epsilon, g, i, j, k, mu, n, q, sigma_b, t, tau, x


def _y_hat(index: sp.Symbol) -> sp.Expr:
    return (x[index] - mu) / (sigma_b + epsilon)


LAYER = Layer(
    key="layernorm_std_eps_biased",
    title="LayerNorm, epsilon added to the biased standard deviation",
    statistics=(
        *CENTERED_STATISTICS,
        Statistic(sigma_b, sp.sqrt(q), "biased standard deviation", mean=False),
    ),
    output=(x[i] - mu) / (sigma_b + epsilon),
    patterns=(Pattern((-t, sp.Integer(0), t), coordinate=2),),
    directions=CENTERED_DIRECTIONS,
    display=((x[i], c[i] + mu), (x[k], c[k] + mu)),
    spread=sigma_b,
    used_by=("graph and vision codebases: `(x - mean) / (x.std(-1, unbiased=False) + eps)`",),
    approach={x[i]: mu + tau * c[i], x[k]: mu + tau * c[k], sigma_b: tau * sigma_b},
    stated={
        # On (-t, 0, t) the biased standard deviation is sqrt(2/3) |t|.
        "response": t / (sp.sqrt(sp.Rational(2, 3)) * sp.Abs(t) + epsilon),
        "slope_at_zero": 1 / epsilon,
        "eigen_ones": sp.Integer(0),
        "eigen_centered": epsilon / (sigma_b + epsilon) ** 2,
        "eigen_complement": 1 / (sigma_b + epsilon),
        "spectral_norm": sp.Piecewise(
            (epsilon / (sigma_b + epsilon) ** 2, sp.Eq(n, 2)), (1 / (sigma_b + epsilon), n >= 3)
        ),
        "spectral_bound": 1 / epsilon,
        # d sigma_b / dx = c / (n sigma_b):
        # dx = (g - mean(g) 1) / (sigma_b + epsilon) - mean(g y_hat) y_hat / sigma_b.
        "vjp": (g[k] - mean(g[j], j)) / (sigma_b + epsilon) - mean(g[j] * _y_hat(j), j) * _y_hat(k) / sigma_b,
    },
    notes={"slope_at_zero": "; sigma_b = sqrt(2/3) |t| has a kink there, the output does not"},
)
