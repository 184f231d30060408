"""The checks of the numeric functions: `agreement`, the one agreement helper; `verify`, run before
any figure is drawn; `accuracy`, errors measured against mpmath.  `numeric.verify` and the like,
their paths before they moved here, still import, as the same modules."""
