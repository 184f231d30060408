"""RMSNorm, epsilon added outside the square root: NumPy functions from the derivations."""

from numeric._layer import NumericLayer

LAYER = NumericLayer("rmsnorm_eps_outside")
forward, jacobian, eigenvalues, spectral_norm, response, slope = LAYER.functions()

__all__ = ["eigenvalues", "forward", "jacobian", "response", "slope", "spectral_norm"]
