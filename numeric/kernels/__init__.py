"""What the facade (`numeric._layer.NumericLayer`) runs: the one lambdify path (`lambdify`), each
layer's compiled functions (`compiled`), the computations behind the facade (`kernel`: the fused
program over blocks of rows, the Jacobian's routes, the backward products and the Hessian
split), the rescaling by the derived homogeneity (`rescale`), the Jacobian's assembly
(`assemble`) and the backward products on rescaled rows (`backward`)."""
