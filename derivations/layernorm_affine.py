r"""LayerNorm with a learnable gain and bias, epsilon inside the square root.

.. math:: y = \gamma \odot \frac{x - \bar{x}\,\mathbf{1}}{\sqrt{q + \varepsilon}} + \beta.

The Jacobian is diag(gamma) J, not symmetric: its norm is bounded through
||diag(gamma) J|| <= max|gamma| ||J||, not read off eigenvalues.
"""

import sympy as sp

from derivations import layernorm
from derivations._layer import Direction, Layer, Pattern
from derivations._symbols import beta, epsilon, gamma, gamma_max, i, q, t

LAYER = Layer(
    key="layernorm_affine",
    title="LayerNorm with gain and bias, epsilon inside the square root",
    statistics=layernorm.CENTERED_STATISTICS,
    output=gamma[i] * layernorm.LAYER.output + beta[i],
    patterns=(Pattern((-t, sp.Integer(0), t), coordinate=2),),
    # Only the ones direction survives the gain: J 1 = diag(gamma) J_LN 1 = 0.
    directions=(Direction("ones", sp.Integer(1), "the all-ones vector 1"),),
    display=layernorm.LAYER.display,
    spread=q,
    stated={
        "response": gamma[2] * t / sp.sqrt(2 * t**2 / 3 + epsilon) + beta[2],
        "slope_at_zero": gamma[2] / sp.sqrt(epsilon),
        "eigen_ones": sp.Integer(0),
        "spectral_bound": gamma_max / sp.sqrt(epsilon),
    },
    parameters=(("gain", gamma), ("bias", beta)),
    gain=gamma,
    base=layernorm.LAYER,
)
