r"""LayerNorm with a learnable gain and bias, epsilon inside the square root.

.. math:: y = \gamma \odot \frac{x - \bar{x}\,\mathbf{1}}{\sqrt{q + \varepsilon}} + \beta.

The Jacobian is diag(gamma) J, not symmetric: its norm is bounded through
||diag(gamma) J|| <= max|gamma| ||J||, not read off eigenvalues.
"""

import sympy as sp

from derivations.derive.affine import affine
from derivations.derive.sums import mean
from derivations.layers import layernorm
from derivations.symbols import beta, epsilon, g, gamma, gamma_max, j, k, mu, s, t, x


def _y_hat(index: sp.Symbol) -> sp.Expr:
    return (x[index] - mu) / s


LAYER = affine(
    layernorm.LAYER,
    key="layernorm_affine",
    title="LayerNorm with gain and bias, epsilon inside the square root",
    used_by=(
        "PyTorch `nn.LayerNorm`, `F.layer_norm` with weight and bias",
        "Keras `LayerNormalization`",
        "Flax `linen.LayerNorm` (both `use_fast_variance` settings)",
    ),
    stated={
        "response": gamma[2] * t / sp.sqrt(2 * t**2 / 3 + epsilon) + beta[2],
        "slope": gamma[2] * epsilon / (2 * t**2 / 3 + epsilon) ** sp.Rational(3, 2),
        "slope_at_zero": gamma[2] / sp.sqrt(epsilon),
        "eigen_ones": sp.Integer(0),
        "spectral_bound": gamma_max / sp.sqrt(epsilon),
        # The kernels' form with the upstream gradient gamma * g, not g: forgetting
        # the gain here is the historical bug.
        "vjp": (gamma[k] * g[k] - mean(gamma[j] * g[j], j) - _y_hat(k) * mean(gamma[j] * g[j] * _y_hat(j), j)) / s,
        "dgain": g[k] * _y_hat(k),
        "dbias": g[k],
    },
)
