r"""LayerNorm with epsilon added to the unbiased standard deviation.

.. math:: y = \frac{x - \bar{x}\,\mathbf{1}}{\sigma_u + \varepsilon},
   \qquad \sigma_u = \sqrt{\tfrac{n}{n-1}\, q}.

The convention of the well-known "Annotated Transformer" implementation
(``std`` uses Bessel's correction there).  sigma_u is not differentiable at a
constant input; the output still is, because c * sigma_u is of second order.
"""

import sympy as sp

from derivations.core.layer import Layer, Pattern, Statistic
from derivations.derive.sums import mean
from derivations.layers.layernorm import CENTERED_DIRECTIONS, CENTERED_STATISTICS
from derivations.symbols import c, epsilon, g, i, j, k, mu, n, q, sigma_u, t, tau, x


def _y_hat(index: sp.Symbol) -> sp.Expr:
    return (x[index] - mu) / (sigma_u + epsilon)


LAYER = Layer(
    key="layernorm_std_eps",
    title="LayerNorm, epsilon added to the unbiased standard deviation",
    statistics=(
        *CENTERED_STATISTICS,
        Statistic(sigma_u, sp.sqrt(n * q / (n - 1)), "unbiased standard deviation", mean=False),
    ),
    output=(x[i] - mu) / (sigma_u + epsilon),
    patterns=(Pattern((-t, sp.Integer(0), t), coordinate=2),),
    directions=CENTERED_DIRECTIONS,
    display=((x[i], c[i] + mu), (x[k], c[k] + mu)),
    spread=sigma_u,
    used_by=("The Annotated Transformer: `(x - mean) / (x.std(-1) + eps)`, unbiased std",),
    approach={x[i]: mu + tau * c[i], x[k]: mu + tau * c[k], sigma_u: tau * sigma_u},
    stated={
        "response": t / (sp.Abs(t) + epsilon),
        "slope_at_zero": 1 / epsilon,
        "eigen_ones": sp.Integer(0),
        "eigen_centered": epsilon / (sigma_u + epsilon) ** 2,
        "eigen_complement": 1 / (sigma_u + epsilon),
        "spectral_norm": sp.Piecewise(
            (epsilon / (sigma_u + epsilon) ** 2, sp.Eq(n, 2)), (1 / (sigma_u + epsilon), n >= 3)
        ),
        "spectral_bound": 1 / epsilon,
        # With y_hat = (x - mean(x)) / (sigma_u + epsilon); d sigma_u / dx = c / ((n - 1) sigma_u):
        # dx = (g - mean(g) 1) / (sigma_u + epsilon) - n / ((n - 1) sigma_u) mean(g y_hat) y_hat.
        "vjp": (g[k] - mean(g[j], j)) / (sigma_u + epsilon)
        - n / ((n - 1) * sigma_u) * mean(g[j] * _y_hat(j), j) * _y_hat(k),
    },
    notes={"slope_at_zero": "; sigma_u = |t| has a kink there, the output does not"},
)
