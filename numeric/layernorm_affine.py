"""LayerNorm with gain and bias (epsilon inside the square root): NumPy functions from the derivations.

The Jacobian diag(gain) J is not symmetric and its spectrum has no closed
form, so this module offers the derived bound ``bound(epsilon, gain)``
= max|gain| / sqrt(epsilon) instead of eigenvalues and a spectral norm: the
toolkit returns no number it did not derive.
"""

from numeric._layer import NumericLayer

LAYER = NumericLayer("layernorm_affine")
forward = LAYER.forward
jacobian = LAYER.jacobian
bound = LAYER.bound

__all__ = ["bound", "forward", "jacobian"]
