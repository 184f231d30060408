"""NumPy functions lambdified from the derivations; nothing here is typed by hand.

``response`` and ``slope`` are LayerNorm's, on the input (-t, 0, t).
"""

from numeric import layernorm
from numeric.layernorm import response, slope

__all__ = ["layernorm", "response", "slope"]
