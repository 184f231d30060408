"""Figures, each drawn from `numeric` only, each after verification passed."""

from figures import layer_normalization_epsilon_response

FIGURES = (layer_normalization_epsilon_response,)

__all__ = ["FIGURES"]
