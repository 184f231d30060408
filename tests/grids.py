"""The parameter grids the tests share."""

EPSILONS = (1e-6, 1e-3, 0.04, 0.25, 1.0, 100.0)
SIZES = (2, 3, 7, 64)

# Every numeric layer whose eigenstructure is derived (a symmetric Jacobian).
SYMMETRIC_LAYERS = ("layernorm", "rmsnorm")
