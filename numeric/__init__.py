"""NumPy functions lambdified from the derivations; nothing here is typed by hand.

``response`` and ``slope`` are LayerNorm's, on the input (-t, 0, t):

>>> import numeric
>>> float(numeric.slope(0.0, 0.25))  # 1/sqrt(epsilon)
2.0
"""

from numeric import layernorm, rmsnorm
from numeric.layernorm import response, slope

__all__ = ["layernorm", "response", "rmsnorm", "slope"]
