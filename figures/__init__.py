"""Figures, each drawn from `numeric` only, each after verification passed."""

from figures import conventions, layer_normalization_epsilon_response, spectrum

FIGURES = (layer_normalization_epsilon_response, conventions, spectrum)

__all__ = ["FIGURES"]
