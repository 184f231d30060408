r"""LayerNorm with a learnable gain and bias, epsilon inside the square root.

.. math:: y = \gamma \odot \frac{x - \bar{x}\,\mathbf{1}}{\sqrt{q + \varepsilon}} + \beta.

The Jacobian is diag(gamma) J, not symmetric: its norm is bounded through
||diag(gamma) J|| <= max|gamma| ||J||, not read off eigenvalues.
"""

import sympy as sp

from derivations import layernorm
from derivations.affine import affine
from derivations.symbols import beta, epsilon, gamma, gamma_max, t

LAYER = affine(
    layernorm.LAYER,
    key="layernorm_affine",
    title="LayerNorm with gain and bias, epsilon inside the square root",
    stated={
        "response": gamma[2] * t / sp.sqrt(2 * t**2 / 3 + epsilon) + beta[2],
        "slope": gamma[2] * epsilon / (2 * t**2 / 3 + epsilon) ** sp.Rational(3, 2),
        "slope_at_zero": gamma[2] / sp.sqrt(epsilon),
        "eigen_ones": sp.Integer(0),
        "spectral_bound": gamma_max / sp.sqrt(epsilon),
    },
)
