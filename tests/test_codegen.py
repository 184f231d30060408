"""`python -m derivations codegen`: the emitted NumPy and C, used as a user would, against `numeric`."""

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
import sympy as sp
from grids import ROW_LAYERS

import numeric
from derivations import LAYERS, codegen
from derivations.__main__ import main
from derivations.codegen import emit, program
from derivations.codegen._c import APART_BINADES

RTOL = 1e-12
# n = 2 is left out: there J^T g is eps/s**3 times a rank-one product, a cancellation of terms
# ~1/s to ~eps/s**3, in which the emitted (centered) and `numeric` (rescaled) sums differ by
# ~1e-7 relative at eps = 1e-8; the right judge is an mpmath reference, not yet written.
SIZES = (3, 7, 64)
# 1.7e308: above 2**1023, where the scale of x and that of its centered entries, each at most
# 2**1023, had a product beyond float64 (epsilon then lost: the forward was O(1) for O(1e-158)).
EPSILONS = (1e-300, 1e-8, 1e-5, 0.25, 1.7e308)


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    """Normwise: the largest difference over the largest entry."""
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), np.finfo(float).tiny))


def _scaled(got: np.ndarray, want: np.ndarray, scale: np.ndarray) -> float:
    """The largest difference over the magnitude the result is summed from: sum_i |g_i| |J_ik|.

    Where J^T g cancels (n = 2, a tiny epsilon) two correct orders of summation differ
    relative to the small result, never relative to the terms that make it.
    """
    return float(np.max(np.abs(got - want) / scale))


def _magnitude(reference, x, eps, dy, params) -> np.ndarray:
    return np.einsum("...ik,...i->...k", np.abs(reference.jacobian(x, eps, *params)), np.abs(dy))


def _inputs(key: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((5, n)) * rng.uniform(0.1, 10) + rng.standard_normal()
    dy = rng.standard_normal((5, n))
    params = tuple(rng.normal(0, 2, n) for _ in LAYERS[key].parameters)
    return x, dy, params


def _imported(tmp_path, key: str, source: str):
    path = tmp_path / f"emitted_{key}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The emitted code takes x, epsilon and per-feature parameters: not a scalar gain, nor a
# keyword that picks a subset of the entries (partial RMSNorm's p).
EMITTED = [key for key in ROW_LAYERS if not LAYERS[key].scalars and not LAYERS[key].subsets]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: emit("nope", "numpy"), "layer must be one of layernorm, "),
        (lambda: emit("rmsnorm", "go"), "target must be one of numpy, torch, c; got 'go'"),
        (lambda: codegen.library("nope"), "layer must be one of layernorm, "),
        (lambda: codegen.emittable("nope"), "layer must be one of layernorm, "),
    ],
)
def test_a_bad_layer_or_target_in_python_is_a_value_error_naming_it(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


@pytest.mark.parametrize("key", [key for key in ROW_LAYERS if LAYERS[key].scalars or LAYERS[key].subsets])
def test_a_layer_whose_inputs_the_emitted_signature_lacks_is_refused_naming_them(key):
    """The emitted code takes x, epsilon and per-feature parameters: a scalar input or a keyword
    that picks a subset of the entries is named in a ValueError, with what the keyword means."""
    layer = LAYERS[key]
    named = [name for name, _ in layer.scalars] or [f"{s.keyword} ({s.meaning})" for s in layer.subsets]
    with pytest.raises(ValueError, match=f"^layer {key} takes ") as raised:
        codegen.emittable(key)
    assert all(name in str(raised.value) for name in named)
    assert str(raised.value).endswith("which the emitted code does not take")


@pytest.mark.parametrize("key", EMITTED)
def test_emitted_numpy_agrees_with_numeric(key, tmp_path, capsys):
    assert main(["codegen", "--layer", key, "--target", "numpy"]) == 0
    module = _imported(tmp_path, key, capsys.readouterr().out)
    plan = program(LAYERS[key])
    reference = getattr(numeric, key)
    for n in SIZES:
        for eps in EPSILONS:
            x, dy, params = _inputs(key, n, n)
            forward = getattr(module, plan.forward)(x, eps, *params)
            assert _relative(forward, reference.forward(x, eps, *params)) <= RTOL
            got = getattr(module, plan.backward)(x, eps, dy, *params)
            want = getattr(reference, plan.backward)(x, eps, dy, *params)
            got, want = (v if isinstance(v, tuple) else (v,) for v in (got, want))
            assert got[0].shape == want[0].shape
            assert _scaled(got[0], want[0], _magnitude(reference, x, eps, dy, params)) <= RTOL, (key, n, eps)
            for emitted, derived in zip(got[1:], want[1:], strict=True):
                assert emitted.shape == derived.shape
                assert _relative(emitted, derived) <= RTOL, (key, n, eps)


def test_emitted_numpy_names_the_formulas_it_implements():
    source = emit("layernorm_affine", "numpy")
    assert source.startswith("# Generated by")
    assert "Implements: layernorm_affine.output" in source
    assert "import numpy as np" in source
    assert "import sympy" not in source


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, ctypes.CDLL]:
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("no system C compiler `cc` on PATH: the emitted C cannot be compiled here")
    folder = tmp_path_factory.mktemp("emitted_c")
    libraries = {}
    for key in EMITTED:
        source = folder / f"{key}.c"
        source.write_text(emit(key, "c"))
        library = folder / f"lib{key}.so"
        subprocess.run(
            [compiler, "-std=c99", "-Wall", "-Werror", "-shared", "-fPIC", "-O2", "-o", library, source, "-lm"],
            check=True,
        )
        libraries[key] = ctypes.CDLL(str(library))
    return libraries


def _pointer(array: np.ndarray):
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


@pytest.mark.parametrize("key", EMITTED)
def test_emitted_c_agrees_with_numeric(key, compiled):
    library = compiled[key]
    plan = program(LAYERS[key])
    reference = getattr(numeric, key)
    forward = getattr(library, f"{key}_{plan.forward}")
    backward = getattr(library, f"{key}_backward")
    count = len(plan.gradients)
    for n in (*SIZES, 768):
        for eps in EPSILONS:
            x, dy, params = _inputs(key, n, 7 * n)
            params = tuple(np.ascontiguousarray(p) for p in params)
            y = np.empty_like(x)
            grads = [np.empty_like(x)] + [np.zeros(n) for _ in range(count - 1)]
            for row in range(x.shape[0]):
                out = y[row]
                forward(ctypes.c_int(n), _pointer(x[row]), ctypes.c_double(eps), *map(_pointer, params), _pointer(out))
                dx = grads[0][row]
                backward(
                    ctypes.c_int(n),
                    _pointer(x[row]),
                    ctypes.c_double(eps),
                    _pointer(dy[row]),
                    *map(_pointer, params),
                    _pointer(dx),
                    *map(_pointer, grads[1:]),
                )
            assert _relative(y, reference.forward(x, eps, *params)) <= RTOL, (key, n, eps)
            want = getattr(reference, plan.backward)(x, eps, dy, *params)
            want = want if isinstance(want, tuple) else (want,)
            assert _scaled(grads[0], want[0], _magnitude(reference, x, eps, dy, params)) <= RTOL, (key, n, eps)
            for got, derived in zip(grads[1:], want[1:], strict=True):
                assert _relative(got, derived) <= RTOL, (key, n, eps)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["codegen", "--layer", "nope", "--target", "c"], "argument --layer: invalid choice: 'nope'"),
        (["codegen", "--layer", "rmsnorm", "--target", "go"], "argument --target: invalid choice: 'go'"),
        (["codegen", "--target", "c"], "the following arguments are required: --layer"),
    ],
)
def test_bad_codegen_arguments_print_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exiting:
        main(argv)
    assert exiting.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


@pytest.mark.parametrize("key", EMITTED)
def test_a_centered_layer_is_emitted_in_the_centered_input(key):
    """Where the layer is written in c = x - mu, its output and gradients are emitted in c: mu
    appears only where c is computed (a form still in mu would cancel terms of size mu)."""
    from derivations.codegen._program import _shift

    source = emit(key, "numpy")
    centered = _shift(LAYERS[key]) is not None
    assert ("    c = " in source) is centered
    results = [line for line in source.splitlines() if line.lstrip().startswith(("y = ", "dx = ", "dgain = "))]
    assert results
    for line in results:
        assert not centered or "mu" not in line.replace("mean_", ""), line


# --- edge rows, epsilon's shapes and torch ------------------------------------------------

# Rows at which a careless form divides 0 by 0 (constant, zero) or squares past float64's range.
EDGE_ROWS = {
    "zero": lambda rng, n: np.zeros(n),
    "constant": lambda rng, n: np.full(n, 3.7),
    "constant offset 1e200": lambda rng, n: np.full(n, 1e200),
    # With epsilon 1e-300, the root of epsilon over the scale underflows: 0/0 unless taken apart.
    "constant offset 1e300": lambda rng, n: np.full(n, -1e300),
    "tiny": lambda rng, n: rng.standard_normal(n) * 1e-150,
    "huge": lambda rng, n: rng.standard_normal(n) * 1e150,
    "near the top of the range": lambda rng, n: rng.standard_normal(n) * 1e300,
    "offset 1e15": lambda rng, n: rng.standard_normal(n) + 1e15,
}


def _edges(key: str, n: int) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(n)
    x = np.stack([make(rng, n) for make in EDGE_ROWS.values()])
    dy = rng.standard_normal(x.shape)
    params = tuple(rng.normal(0, 2, n) for _ in LAYERS[key].parameters)
    return x, dy, params


def _rowwise(got: np.ndarray, want: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Each row's largest difference over the largest magnitude the row is made of."""
    floor = np.finfo(float).tiny
    return np.max(np.abs(got - want), axis=-1) / np.maximum(np.max(scale, axis=-1), floor)


def _check_edges(key, eps, x, dy, params, forward, grads, names=tuple(EDGE_ROWS)) -> None:
    """``forward`` and ``grads`` (dx, then each parameter's per row) against `numeric`, row by row."""
    reference = getattr(numeric, key)
    want_y = reference.forward(x, eps, *params)
    bad = _rowwise(forward, want_y, np.abs(want_y)) > RTOL
    assert not bad.any(), ("forward", key, eps, [names[r] for r in np.flatnonzero(bad)])
    plan = program(LAYERS[key])
    want = getattr(reference, plan.backward)(x, eps, dy, *params)
    want = want if isinstance(want, tuple) else (want,)
    bad = _rowwise(grads[0], want[0], _magnitude(reference, x, eps, dy, params)) > RTOL
    assert not bad.any(), ("dx", key, eps, [names[r] for r in np.flatnonzero(bad)])
    for (name, _), got, derived in zip(plan.gradients[1:], grads[1:], want[1:], strict=True):
        assert _relative(got, derived) <= RTOL, (name, key, eps)


@pytest.mark.parametrize("key", EMITTED)
def test_emitted_numpy_agrees_with_numeric_on_edge_rows(key, tmp_path):
    module = _imported(tmp_path, key, emit(key, "numpy"))
    plan = program(LAYERS[key])
    for n in (3, 64):
        x, dy, params = _edges(key, n)
        for eps in EPSILONS:
            got = getattr(module, plan.backward)(x, eps, dy, *params)
            got = got if isinstance(got, tuple) else (got,)
            _check_edges(key, eps, x, dy, params, getattr(module, plan.forward)(x, eps, *params), got)


@pytest.mark.parametrize("key", EMITTED)
def test_emitted_c_agrees_with_numeric_on_edge_rows(key, compiled):
    library = compiled[key]
    plan = program(LAYERS[key])
    forward = getattr(library, f"{key}_{plan.forward}")
    backward = getattr(library, f"{key}_backward")
    for n in (3, 64):
        x, dy, params = _edges(key, n)
        params = tuple(np.ascontiguousarray(p) for p in params)
        for eps in EPSILONS:
            y = np.empty_like(x)
            grads = [np.full_like(x, 7.0)] + [np.zeros(n) for _ in plan.gradients[1:]]
            statuses = []
            for row in range(x.shape[0]):
                forward(
                    ctypes.c_int(n), _pointer(x[row]), ctypes.c_double(eps), *map(_pointer, params), _pointer(y[row])
                )
                statuses.append(
                    backward(
                        ctypes.c_int(n),
                        _pointer(x[row]),
                        ctypes.c_double(eps),
                        _pointer(dy[row]),
                        *map(_pointer, params),
                        _pointer(grads[0][row]),
                        *map(_pointer, grads[1:]),
                    )
                )
            # Status 3, writing nothing, exactly where a layer with parameters meets a row whose
            # largest |x_i| is more than 2**APART_BINADES below the root of epsilon.
            top = np.abs(x).max(axis=-1)  # ilogb(v) is frexp's exponent less one
            binades = np.frexp(eps ** (1 / plan.epsilon_degree))[1] - np.frexp(top)[1]
            apart = (top > 0) & (binades > APART_BINADES)
            assert statuses == [3 if a and plan.gradients[1:] else 0 for a in apart], (key, eps, statuses)
            assert (grads[0][apart & bool(plan.gradients[1:])] == 7.0).all()
            taken = np.array(statuses) == 0
            names = [name for name, keep in zip(EDGE_ROWS, taken, strict=True) if keep]
            _check_edges(key, eps, x[taken], dy[taken], params, y[taken], [grads[0][taken], *grads[1:]], names)


@pytest.fixture(scope="module")
def torch_modules(tmp_path_factory):
    if os.environ.get("EPSILON_LAYERNORM_REQUIRE_TORCH"):
        import torch  # noqa: F401 - make crosscheck installs it, so a skip there would hide a failure
    else:
        pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("emitted_torch")
    return {key: _imported(folder, f"{key}_torch", emit(key, "torch")) for key in EMITTED}


@pytest.mark.parametrize("key", EMITTED)
def test_emitted_torch_agrees_with_numeric_on_edge_rows(key, torch_modules):
    import torch

    module = torch_modules[key]
    plan = program(LAYERS[key])
    for n in (3, 64):
        x, dy, params = _edges(key, n)
        for eps in EPSILONS:
            xt = torch.tensor(x, requires_grad=True)
            pt = [torch.tensor(p, requires_grad=True) for p in params]
            y = getattr(module, key)(xt, eps, *pt)
            grads = torch.autograd.grad(y, [xt, *pt], torch.tensor(dy))
            _check_edges(key, eps, x, dy, params, y.detach().numpy(), [g.numpy() for g in grads])
            direct = getattr(module, plan.backward)(torch.tensor(x), eps, torch.tensor(dy), *map(torch.tensor, params))
            direct = direct if isinstance(direct, tuple) else (direct,)
            _check_edges(key, eps, x, dy, params, y.detach().numpy(), [g.numpy() for g in direct])


@pytest.mark.parametrize("key", EMITTED)
def test_emitted_code_states_its_range_in_the_header(key):
    for target in ("numpy", "torch", "c"):
        source = emit(key, target)
        assert "right for every finite x and epsilon > 0" in source, (key, target)
        if LAYERS[key].approach:
            assert f"where {LAYERS[key].spread} = 0" in source, (key, target)


EPSILON_SHAPES = [(), (1,), (2,), (2, 1), (1, 1), (3, 2)]


def _refusal(function, *args) -> str | None:
    """The message of the ValueError ``function(*args)`` raises, or None where it raises none."""
    try:
        function(*args)
    except ValueError as error:
        return str(error)
    return None


@pytest.mark.parametrize("key", EMITTED)
@pytest.mark.parametrize("eps_shape", EPSILON_SHAPES)
def test_emitted_numpy_broadcasts_epsilon_as_numeric_does(key, eps_shape, tmp_path):
    module = _imported(tmp_path, key, emit(key, "numpy"))
    plan = program(LAYERS[key])
    reference = getattr(numeric, key)
    rng = np.random.default_rng(3)
    x, dy = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    params = tuple(rng.normal(0, 2, 3) for _ in LAYERS[key].parameters)
    eps = rng.uniform(0.01, 1, eps_shape)
    refused = _refusal(reference.forward, x, eps, *params)
    if refused is not None:
        with pytest.raises(ValueError, match=re.escape(refused)):
            getattr(module, plan.forward)(x, eps, *params)
        return
    want = reference.forward(x, eps, *params)
    got = getattr(module, plan.forward)(x, eps, *params)
    assert got.shape == want.shape
    assert _relative(got, want) <= RTOL
    got_b = getattr(module, plan.backward)(x, eps, dy, *params)
    want_b = getattr(reference, plan.backward)(x, eps, dy, *params)
    got_b, want_b = (v if isinstance(v, tuple) else (v,) for v in (got_b, want_b))
    for emitted, derived in zip(got_b, want_b, strict=True):
        assert emitted.shape == derived.shape
        assert _relative(emitted, derived) <= 1e-10


@pytest.mark.parametrize("eps", [0.0, -1e-5, np.array([1e-5, -1.0])])
def test_emitted_numpy_refuses_an_epsilon_that_is_not_positive(eps, tmp_path):
    module = _imported(tmp_path, "layernorm", emit("layernorm", "numpy"))
    with pytest.raises(ValueError, match="epsilon must be positive"):
        module.forward(np.ones((2, 3)), eps)


@pytest.mark.parametrize("key", EMITTED)
def test_emitted_torch_differentiates_epsilon(key, torch_modules):
    """gradcheck on x, epsilon (a tensor per row) and the parameters, and on the backward again."""
    import torch

    module = torch_modules[key]
    rng = np.random.default_rng(11)
    x = torch.tensor(rng.standard_normal((2, 4)) * 2, requires_grad=True)
    eps = torch.tensor(rng.uniform(0.05, 0.5, (2,)), requires_grad=True)
    params = [torch.tensor(rng.normal(0, 2, 4), requires_grad=True) for _ in LAYERS[key].parameters]
    function = getattr(module, key)
    assert torch.autograd.gradcheck(function, (x, eps, *params))
    if key != "l2norm_clamped":  # its clamp is not twice differentiable where the regimes meet
        assert torch.autograd.gradgradcheck(function, (x, eps, *params))
    for shape in [(), (2, 1)]:
        e = torch.full(shape, 0.1, dtype=torch.float64, requires_grad=True)
        (grad,) = torch.autograd.grad(function(x, e, *params).sum(), [e])
        assert grad.shape == e.shape


@pytest.mark.parametrize("key", EMITTED)
@pytest.mark.parametrize("eps_shape", EPSILON_SHAPES)
def test_emitted_torch_broadcasts_epsilon_as_numeric_does(key, eps_shape, torch_modules):
    import torch

    module = torch_modules[key]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3))
    params = tuple(rng.normal(0, 2, 3) for _ in LAYERS[key].parameters)
    eps = rng.uniform(0.01, 1, eps_shape)
    function = getattr(module, key)
    refused = _refusal(getattr(numeric, key).forward, x, eps, *params)
    if refused is not None:
        with pytest.raises(ValueError, match=re.escape(refused)):
            function(torch.tensor(x), torch.tensor(eps), *map(torch.tensor, params))
        return
    want = getattr(numeric, key).forward(x, eps, *params)
    got = function(torch.tensor(x), torch.tensor(eps), *map(torch.tensor, params)).numpy()
    assert got.shape == want.shape
    assert _relative(got, want) <= RTOL


# (x, dy, epsilon) shapes numeric's vjp accepts: x and dy broadcast against each other (the
# gradient has their common shape), epsilon against their common batch shape (and may widen it).
BACKWARD_SHAPES = [
    ((3,), (2, 3), ()),
    ((2, 3), (3,), (2,)),
    ((2, 1, 3), (4, 3), (2, 1)),
    ((1, 3), (2, 3), (2,)),
    ((4, 3), (4, 3), (4,)),
    ((3,), (3,), (2,)),
    ((2, 1, 3), (1, 3), (5, 2, 1)),
]


@pytest.mark.parametrize("key", EMITTED)
@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_the_emitted_backward_broadcasts_x_dy_and_epsilon_as_numeric_does(key, target, request, tmp_path):
    """Every shape of x, dy and epsilon that numeric's vjp takes: the same gradient, of its shape, and
    each parameter's gradient summed over every row of the broadcast batch."""
    rng = np.random.default_rng(17)
    plan = program(LAYERS[key])
    if target == "torch":
        modules = request.getfixturevalue("torch_modules")  # skipped without torch, but in make crosscheck
        import torch

        module, array = modules[key], torch.tensor
    else:
        module, array = _imported(tmp_path, key, emit(key, "numpy")), np.asarray
    backward = getattr(module, plan.backward)
    for x_shape, dy_shape, eps_shape in BACKWARD_SHAPES:
        x, dy = rng.standard_normal(x_shape), rng.standard_normal(dy_shape)
        eps = rng.uniform(0.01, 1, eps_shape)
        params = tuple(rng.normal(0, 2, 3) for _ in LAYERS[key].parameters)
        want = getattr(numeric, key).vjp(x, eps, dy, *params)
        got = backward(array(x), array(eps), array(dy), *map(array, params))
        want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
        assert len(got) == len(want)
        for name, g, w in zip((name for name, _ in plan.gradients), got, want, strict=True):
            g = g.numpy() if target == "torch" else np.asarray(g)
            assert g.shape == w.shape, (name, x_shape, dy_shape, eps_shape)
            assert _relative(g, w) <= RTOL, (name, x_shape, dy_shape, eps_shape)


def test_the_centering_shift_is_read_from_the_rule_for_x_i_alone():
    """`_shift` takes mu from the display rule x_i = c_i + mu, wherever it stands among the rules;
    a rule for another entry (x_k = c_k + mu) is no shift of x_i."""
    import dataclasses

    import sympy as sp

    from derivations.codegen import _numpy
    from derivations.codegen._program import _shift
    from derivations.symbols import c, i, k, mu, x

    layernorm = LAYERS["layernorm"]
    rules = dict(layernorm.display)
    assert rules[x[i]] == mu + c[i]
    assert rules[x[k]] == mu + c[k]
    reordered = dataclasses.replace(
        layernorm, display=((x[k], rules[x[k]]), *((old, new) for old, new in layernorm.display if old != x[k]))
    )
    assert reordered.display[0][0] == x[k]
    assert _shift(reordered) == mu
    # The order of the display rules changes nothing the emitted code computes.
    assert _numpy.emit(program(reordered)) == emit("layernorm", "numpy")
    only_k = dataclasses.replace(layernorm, display=tuple((old, new) for old, new in layernorm.display if old != x[i]))
    assert _shift(only_k) is None
    # Nor is a rule for x_i whose value is not written in c.
    assert _shift(dataclasses.replace(layernorm, display=((x[i], mu + sp.Symbol("d")),))) is None


@pytest.mark.parametrize("key", EMITTED)
def test_emitted_torch_double_backward_gives_the_jvp_at_zero_and_inside_each_regime(key, torch_modules):
    """J v by differentiating the emitted backward in dy (what torch.autograd.functional.jvp
    does): at x = 0, inside a clamp's flat regime, the branch not taken divided by ||x|| = 0,
    and torch.where's zero gradient times its infinite derivative gave NaN."""
    import torch

    module = torch_modules[key]
    rng = np.random.default_rng(11)
    params = tuple(rng.normal(0, 2, 4) for _ in LAYERS[key].parameters)
    v = np.array([1.0, -2.0, 0.5, 3.0])
    for x in (np.zeros(4), 0.01 * rng.standard_normal(4), rng.standard_normal(4)):
        xt = torch.tensor(x, requires_grad=True)
        y = getattr(module, key)(xt, 0.3, *map(torch.tensor, params))
        dy = torch.ones(4, dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(y, xt, dy, create_graph=True)
        (jv,) = torch.autograd.grad(g, dy, torch.tensor(v))
        want = getattr(numeric, key).jvp(x, 0.3, v, *params)
        assert np.isfinite(jv.numpy()).all(), (key, x)
        assert _relative(jv.numpy(), want) <= RTOL, (key, x)


@pytest.mark.parametrize("key", EMITTED)
def test_the_epsilon_gradients_scaling_degree_is_the_one_its_finite_differences_show(key):
    """The emitted torch multiplies the gradient in epsilon, computed at the scaled row, by m**d.
    d is read off numeric's forward here, without torch: the central difference in epsilon at
    (2x, 2**e eps) over the one at (x, eps) is 2**d."""
    from derivations.codegen._program import DEPSILON
    from derivations.derive import scaling

    plan = program(LAYERS[key])
    rng = np.random.default_rng(3)
    x = rng.standard_normal(5)
    params = tuple(rng.normal(1, 0.3, 5) for _ in LAYERS[key].parameters)
    forward = getattr(numeric, key).forward
    e = scaling.epsilon_degree(LAYERS[key])

    def slope(scale: float) -> np.ndarray:
        eps, h = 30.0 * scale**e, 1e-5 * 30.0 * scale**e  # above |x|: a clamp on it is active
        return (forward(scale * x, eps + h, *params) - forward(scale * x, eps - h, *params)) / (2 * h)

    ratio = np.max(np.abs(slope(2.0))) / np.max(np.abs(slope(1.0)))
    assert ratio == pytest.approx(2.0 ** plan.degrees[DEPSILON], rel=1e-4)


def test_emitted_code_says_where_its_gradient_has_no_value(tmp_path):
    """l2norm_clamped at |x| = epsilon, its kink: numeric refuses the vjp there, the emitted code
    returns NaN, which its header said nothing of (found from outside)."""
    for target in ("numpy", "torch", "c"):
        assert "(dx is NaN where epsilon = norm_x: the layer has no derivative there)" in emit("l2norm_clamped", target)
    for key in EMITTED:
        if key != "l2norm_clamped":
            assert "is NaN where" not in emit(key, "numpy"), key
    module = _imported(tmp_path, "l2norm_clamped", emit("l2norm_clamped", "numpy"))
    # |x| = sqrt(4) sqrt(1/4) = 1 exactly: the kink at epsilon = 1, as computed.
    x, dy = np.array([1.0, 0.0, 0.0, 0.0]), np.array([1.0, -2.0, 0.5, 3.0])
    assert np.isnan(module.vjp(x, 1.0, dy)).all()
    assert np.isfinite(module.vjp(x, 0.5, dy)).all()
    assert np.isfinite(module.vjp(x, 2.0, dy)).all()
    with pytest.raises(ValueError, match="the kink, where this derivative does not exist"):
        numeric.l2norm_clamped.vjp(x, 1.0, dy)


@pytest.mark.parametrize("key", EMITTED)
def test_the_emitted_c_casts_to_void_exactly_the_arguments_a_function_leaves_unused(key):
    """``(void)name;`` silences -Wunused-parameter for an argument the function never reads, and is
    written for no other: every argument is read or voided, none both."""
    source = emit(key, "c")
    functions = re.findall(r"^\w[^;{]*\b(\w+)\(([^)]*)\)\s*\{(.*?)^\}", source, flags=re.M | re.S)
    assert functions
    for name, arguments, body in functions:
        voided = set(re.findall(r"\(void\)(\w+);", body))
        rest = re.sub(r"\(void\)\w+;", "", body)
        for argument in (a.split()[-1].lstrip("*") for a in arguments.split(",") if a.strip() not in ("", "void")):
            read = re.search(rf"\b{re.escape(argument)}\b", rest) is not None
            assert read != (argument in voided), (name, argument, read)


@pytest.mark.parametrize("scaled", [True, False])
def test_the_c_printer_knows_dy_by_value_not_by_identity(scaled):
    """dy is found by equality: a derivation read back from the cache, or made after SymPy's
    symbol cache dropped it, holds an equal symbol that need not be the same object."""
    import sympy as sp

    from derivations.codegen._c import Printer
    from derivations.codegen._program import DY

    again = sp.Symbol.__xnew__(sp.Symbol, DY.name, **DY.assumptions0)  # SymPy's uncached constructor
    assert again == DY
    assert again is not DY  # what the test is about: a second object, equal to the first
    printer = Printer(frozenset({DY}), scaled=scaled)
    assert printer.doprint(again) == printer.doprint(DY)
    assert "dy[" in printer.doprint(again)


def test_a_gradient_by_cases_names_the_equation_its_two_strict_cases_leave_out():
    """x > 1 and x < 1 leave x = 1 out; x > 1 and x < 0 leave a whole interval, which no one
    equation names; a last case that always holds leaves nothing out."""
    import sympy as sp

    from derivations.codegen._program import _undefined

    a, b, z = sp.symbols("a b z")
    assert _undefined(sp.Piecewise((a, z > 1), (b, z < 1))) == "z = 1"
    assert _undefined(sp.Piecewise((a, z > 1), (b, z < 0))) == "none of its conditions holds"
    assert _undefined(sp.Piecewise((a, z > 1), (b, True))) is None


@pytest.mark.parametrize("key", ["rmsnorm", "rmsnorm_gemma", "layernorm_affine"])
def test_the_emitted_torch_code_says_where_parameter_gradients_are_summed(key):
    """Each parameter's gradient is summed over the leading axes, and the emitted module says so
    wherever the layer has a parameter: one (Gemma's weight) or two (a gain and a bias)."""
    source = emit(key, "torch")
    assert ("parameter gradients summed over leading axes" in source) == bool(LAYERS[key].parameters)


@pytest.mark.parametrize("power", [2, 3, 8, -1, -8, sp.Rational(1, 2), sp.Rational(7, 2), sp.Rational(-7, 2)])
def test_the_emitted_code_multiplies_out_powers_up_to_the_eighth_and_their_halves(power):
    """a**(p/q) for q = 1 or 2 and 0 < |p| <= 8 is printed as products and at most one square root
    in the emitted C and NumPy code (torch's printer shares the rule): a multiply is cheaper, and
    exact where pow may not be. A ninth power is left to pow."""
    from derivations.codegen import _c, _numpy, _program

    a = sp.Symbol("a", positive=True)
    printers = {
        "C": (_c.Printer(frozenset()), "sqrt"),
        "NumPy": (_numpy.Printer(), "np.sqrt"),
    }
    for name, (printer, sqrt) in printers.items():
        shown = _program.half_power(printer, a**power, sqrt)
        assert shown is not None, (name, power)
        assert "pow" not in shown, (name, shown)
        assert shown.count(sqrt + "(") == (1 if sp.Rational(power).q == 2 else 0), (name, shown)
        assert _program.half_power(printer, a ** (9 * sp.sign(power)), sqrt) is None


def test_the_header_names_each_result_with_the_power_of_m_it_is_scaled_back_by():
    """y is of degree 0, dx of -1 and the gradient in epsilon (torch's name for it) of -2, for
    LayerNorm, whose epsilon scales as m**2."""
    header = [line for line in emit("layernorm", "numpy").splitlines() if "each result times" in line]
    assert header == [
        "# then each result times m**d (y: d = 0, dx: d = -1, the gradient in epsilon, torch: d = -2): "
        "right for every finite x and epsilon > 0."
    ]
