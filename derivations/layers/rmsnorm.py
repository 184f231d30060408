r"""RMSNorm with epsilon inside the square root (PyTorch ``nn.RMSNorm``, T5, LLaMA).

.. math:: \mathrm{RMS}(x) = \frac{x}{\sqrt{r + \varepsilon}}, \qquad r = \overline{x^2}.

No centering: the input itself is an eigenvector of the Jacobian, and the
all-ones vector is not special.
"""

import sympy as sp

from derivations.core.layer import Direction, Layer, Pattern, Statistic
from derivations.derive.sums import mean
from derivations.symbols import epsilon, g, i, j, k, n, r, s, t, w, x

_x = sp.MatrixSymbol("x", n, 1)

# The input itself and its orthogonal complement: the eigen directions of
# every layer that does not center.
RAW_DIRECTIONS = (
    Direction("x", x[k], "the input x itself"),
    Direction("complement", w[k], "every w orthogonal to x", constraints=(x[k] * w[k],), complement=True),
)

# A uniform input t * 1: centering layers map it to zero, RMS layers do not.
UNIFORM = Pattern((t, t, t), coordinate=2, suffix="_uniform")

LAYER = Layer(
    key="rmsnorm",
    title="RMSNorm, epsilon inside the square root",
    statistics=(Statistic(r, x[j] ** 2, "mean of the squared entries"),),
    output=x[i] / sp.sqrt(r + epsilon),
    patterns=(Pattern((-t, sp.Integer(0), t), coordinate=2), UNIFORM),
    directions=RAW_DIRECTIONS,
    display=((sp.sqrt(r + epsilon), s),),
    spread=r,
    used_by=(
        "PyTorch `F.rms_norm` without weight",
        "Keras `ops.rms_normalization` (its docstring omits epsilon; the code adds it under the root)",
    ),
    stated={
        "response": t / sp.sqrt(2 * t**2 / 3 + epsilon),
        "slope": epsilon / (2 * t**2 / 3 + epsilon) ** sp.Rational(3, 2),
        "slope_at_zero": 1 / sp.sqrt(epsilon),
        "response_uniform": t / sp.sqrt(t**2 + epsilon),
        "slope_at_zero_uniform": 1 / sp.sqrt(epsilon),
        "jacobian": sp.Identity(n) / s - _x * _x.T / (n * s**3),
        "eigen_x": epsilon / s**3,
        "eigen_complement": 1 / s,
        "spectral_norm": 1 / s,
        "spectral_bound": 1 / sp.sqrt(epsilon),
        "second_moment": r / (r + epsilon),
        # As RMSNorm kernels write it: dx = g / s - mean(g x) x / s**3.
        "vjp": g[k] / s - mean(g[j] * x[j], j) * x[k] / s**3,
    },
)
