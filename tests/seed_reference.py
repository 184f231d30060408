"""The seed script's hand-typed functions, verbatim: baseline and outside reference.

These two lines are the only hand-typed formulas in the project, kept here
(not in numeric/) so that benchmarks and tests can compare against them.
"""

import numpy as np


def response(t, epsilon):
    return t / np.sqrt(2 * t**2 / 3 + epsilon)


def slope(t, epsilon):
    return epsilon / (2 * t**2 / 3 + epsilon) ** 1.5
