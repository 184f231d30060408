"""The symbols every derivation shares, with the assumptions SymPy may use."""

import sympy as sp

t = sp.Symbol("t", real=True)
epsilon = sp.Symbol("epsilon", positive=True)
n = sp.Symbol("n", integer=True, positive=True)

# Statistics of the input vector.  q is a mean of squares, hence nonnegative;
# s = sqrt(q + epsilon) is the normalizing scale, hence positive.
mu = sp.Symbol("mu", real=True)
q = sp.Symbol("q", nonnegative=True)
r = sp.Symbol("r", nonnegative=True)  # mean of the squared raw entries (RMS layers)
# Standard deviations some conventions add epsilon to: sigma = sqrt(r) of the
# raw entries, sigma_u = sqrt(n q / (n - 1)) of the centered ones (unbiased).
sigma = sp.Symbol("sigma", nonnegative=True)
sigma_u = sp.Symbol("sigma_u", nonnegative=True)
# ... and sigma_b = sqrt(q), the biased one of the centered entries.
sigma_b = sp.Symbol("sigma_b", nonnegative=True)
# The Euclidean norm of the input, which clamped layers compare with epsilon,
# and the one scalar gain of ScaleNorm.
norm_x = sp.Symbol("norm_x", nonnegative=True)
g_s = sp.Symbol("g_s", real=True)
# Partial RMSNorm: the mean square r_k of the first k entries, the fraction
# kappa = k / n of the entries they are, and k itself, printed as it is
# defined (ceil(p n)) to keep it apart from the index k.
r_k = sp.Symbol("r_k", nonnegative=True)
kappa = sp.Symbol("kappa", positive=True)
k_p = sp.Symbol("k_p", integer=True, positive=True)

# The one learnable scalar of Dynamic Tanh, tanh(alpha x): no epsilon, 1/alpha sets the scale.
alpha = sp.Symbol("alpha", real=True)
# The parameter of a path that reaches the degenerate input as tau -> 0+.
tau = sp.Symbol("tau", positive=True)
s = sp.Symbol("s", positive=True)

# Entries of the input x, of a test vector w, and of the centered input c.
x = sp.IndexedBase("x", real=True)
w = sp.IndexedBase("w", real=True)
c = sp.IndexedBase("c", real=True)

# The upstream gradient g = dL/dy, a direction v for forward mode, and a second
# direction u (only to state that the Hessian product is symmetric).
g = sp.IndexedBase("g", real=True)
v = sp.IndexedBase("v", real=True)
u = sp.IndexedBase("u", real=True)

# Learnable per-feature gain and bias, and the largest |gain|.
gamma = sp.IndexedBase("gamma", real=True)
beta = sp.IndexedBase("beta", real=True)
gamma_max = sp.Symbol("gamma_max", positive=True)
# Gemma's weight w (its gain is 1 + w), and the largest |1 + w_i|.
w_gemma = sp.IndexedBase("w", real=True)
gemma_max = sp.Symbol("gemma_max", positive=True)

# Row, column and summation indices, all ranging over 0 .. n-1.
i, j, k = sp.symbols("i j k", integer=True, nonnegative=True)

# Kronecker delta of the row and column index as a plain symbol, for lambdify.
delta = sp.Symbol("delta_ik", real=True)

# Matrix-level names used only to state results in matrix form.
J = sp.MatrixSymbol("J", n, n)
P = sp.MatrixSymbol("P", n, n)
ones = sp.MatrixSymbol(r"\mathbf{1}", n, 1)
c_vec = sp.MatrixSymbol("c", n, 1)
norm_J = sp.Symbol(r"\|J\|_2", positive=True)
diag_gamma = sp.MatrixSymbol(r"\operatorname{diag}(\gamma)", n, n)

LATEX_NAMES = {
    epsilon: r"\varepsilon",
    norm_x: r"\|x\|_{2}",
    sigma_u: r"\sigma_u",
    sigma_b: r"\sigma_b",
    gamma_max: r"\max_i \lvert\gamma_i\rvert",
    gemma_max: r"\max_i \lvert 1 + w_i\rvert",
    k_p: r"\lceil p n \rceil",
}
