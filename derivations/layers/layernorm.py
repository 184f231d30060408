r"""Layer normalization with epsilon inside the square root, unit gain, zero bias.

.. math:: \mathrm{LN}(x) = \frac{x - \bar{x}\,\mathbf{1}}{\sqrt{q + \varepsilon}},
   \qquad q = \overline{(x - \bar{x})^2}.

The definition is ``statistics`` and ``output``; ``stated`` holds the forms
the literature states, which every derivation must prove, not return.
"""

import sympy as sp

from derivations.core.layer import Direction, Layer, Pattern, Statistic
from derivations.derive.sums import mean
from derivations.symbols import c, c_vec, epsilon, g, i, j, k, mu, n, ones, q, s, t, w, x

# The mean and the (biased) variance: what every centering layer computes.
CENTERED_STATISTICS = (
    Statistic(mu, x[j], "mean of the entries"),
    Statistic(q, (x[j] - mu) ** 2, "mean square of the centered entries"),
)

# The all-ones vector, the centered input, and what is orthogonal to both:
# the eigen directions of every centering layer.
CENTERED_DIRECTIONS = (
    Direction("ones", sp.Integer(1), "the all-ones vector 1"),
    Direction("centered", x[k] - mu, "the centered input c = x - mean(x) 1"),
    Direction(
        "complement",
        w[k],
        "every w orthogonal to 1 and to c",
        constraints=(w[k], (x[k] - mu) * w[k]),
        complement=True,
    ),
)

LAYER = Layer(
    key="layernorm",
    title="LayerNorm, epsilon inside the square root",
    statistics=CENTERED_STATISTICS,
    output=(x[i] - mu) / sp.sqrt(q + epsilon),
    patterns=(Pattern((-t, sp.Integer(0), t), coordinate=2),),
    directions=CENTERED_DIRECTIONS,
    display=(
        (x[i], c[i] + mu),
        (x[k], c[k] + mu),
        (sp.sqrt(q + epsilon), s),
    ),
    spread=q,
    used_by=(
        "PyTorch `F.layer_norm` without weight",
        'JAX `jax.nn.standardize` (`algorithm="fast"` and `"stable"`)',
        "Keras `ops.layer_normalization` without gamma, beta",
    ),
    stated={
        "response": t / sp.sqrt(2 * t**2 / 3 + epsilon),
        "slope": epsilon / (2 * t**2 / 3 + epsilon) ** sp.Rational(3, 2),
        "slope_at_zero": 1 / sp.sqrt(epsilon),
        "asymptote": sp.sqrt(sp.Rational(3, 2)),
        "jacobian": sp.Identity(n) / s - ones * ones.T / (n * s) - c_vec * c_vec.T / (n * s**3),
        "eigen_ones": sp.Integer(0),
        "eigen_centered": epsilon / s**3,
        "eigen_complement": 1 / s,
        "spectral_norm": sp.Piecewise((epsilon / s**3, sp.Eq(n, 2)), (1 / s, n >= 3)),
        "spectral_bound": 1 / sp.sqrt(epsilon),
        "second_moment": q / (q + epsilon),
        # As common CUDA and Triton kernels write it, with y_hat = (x - mean(x)) / s:
        # dx = (g - mean(g) 1 - y_hat mean(g y_hat)) / s.
        "vjp": (g[k] - mean(g[j], j) - (x[k] - mu) / s * mean(g[j] * (x[j] - mu) / s, j)) / s,
    },
)
