"""LayerNorm (epsilon inside the square root): NumPy functions from the derivations."""

from numeric._layer import NumericLayer

LAYER = NumericLayer("layernorm")

response = LAYER.response
slope = LAYER.slope
forward = LAYER.forward
jacobian = LAYER.jacobian
eigenvalues = LAYER.eigenvalues
spectral_norm = LAYER.spectral_norm

__all__ = ["eigenvalues", "forward", "jacobian", "response", "slope", "spectral_norm"]
