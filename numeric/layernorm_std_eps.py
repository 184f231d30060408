"""LayerNorm, epsilon added to the unbiased standard deviation: NumPy functions from the derivations."""

from numeric._layer import NumericLayer

LAYER = NumericLayer("layernorm_std_eps")
forward, jacobian, eigenvalues, spectral_norm, response, slope = LAYER.functions()

__all__ = ["eigenvalues", "forward", "jacobian", "response", "slope", "spectral_norm"]
