"""The compiled path (`numeric.kernels.native`): the emitted C, built and called for forward and vjp.

It must agree with NumPy's path wherever both apply, refuse what NumPy's path refuses, and be
optional: without a compiler every function still runs, on NumPy's path, and says so.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

import numeric
from derivations import LAYERS, codegen
from derivations.derive import jacobian
from numeric.checks.agreement import assert_agree
from numeric.kernels import native

ROOT = Path(__file__).resolve().parent.parent
EMITTABLE = []
for _key in LAYERS:
    try:
        codegen.emittable(_key)
    except ValueError:
        continue
    EMITTABLE.append(_key)

needs_compiler = pytest.mark.skipif(
    native.compiler() is None and not os.environ.get("EPSILON_LAYERNORM_REQUIRE_C"),
    reason="no C compiler here: the compiled path is off (EPSILON_LAYERNORM_REQUIRE_C=1 makes this a failure)",
)


@pytest.fixture(autouse=True)
def _compiled_path_on(monkeypatch):
    """These tests are about the compiled path: on, whatever EPSILON_LAYERNORM_BACKEND says."""
    monkeypatch.delenv(native.ENVIRONMENT, raising=False)
    native.clear()
    yield
    monkeypatch.undo()
    native.clear()


def _both(monkeypatch, call):
    """``call()`` on the compiled path, then on NumPy's (the environment as it was after)."""
    with monkeypatch.context() as patch:
        patch.delenv(native.ENVIRONMENT, raising=False)
        native.clear()
        compiled = call()
        patch.setenv(native.ENVIRONMENT, "numpy")
        native.clear()
        reference = call()
    native.clear()
    return compiled, reference


def _normwise(got, want) -> float:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), np.finfo(float).tiny))


@needs_compiler
def test_the_compiled_path_is_in_use_for_every_layer_the_emitted_c_takes():
    assert numeric.backend() == "c"
    for key in EMITTABLE:
        assert numeric.backend(key) == "c", key
    # A layer applied block by block, or one with a scalar input, is NumPy's.
    assert numeric.backend("groupnorm") == "numpy"
    assert numeric.backend("dyt") == "numpy"


@needs_compiler
@pytest.mark.parametrize("key", EMITTABLE)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_and_numpy_paths_agree(key, dtype, monkeypatch):
    rng = np.random.default_rng(sum(map(ord, key)))
    n = 37  # not a multiple of the 8 lanes: the last entries take the tail loop
    layer = getattr(numeric, key)
    named = {name: rng.normal(0, 2, n).astype(dtype) for name, _ in LAYERS[key].parameters}
    # Rows at ordinary and extreme scales, offset far from 0, and a constant row.
    extreme = 1e150 if dtype == np.float64 else 1e30
    # 3e-22: a square of a float32 entry is subnormal as a float (the C reads entries as doubles).
    scales = np.array([1.0, 1e-3, 1e3, 1 / extreme, extreme, 1.0, 1.0, 3e-22])[:, None]
    x = rng.standard_normal((8, n)) * scales
    x[5] += 1e6
    x[6] = 2.5
    x = x.astype(dtype)
    dy = rng.standard_normal((8, n)).astype(dtype)
    tolerance = 4e-6 if dtype == np.float32 else 1e-12
    # 1e-36: below the float32 rows' root mean square at 3e-22 (epsilon outside the root), where
    # an error in their squares shows.
    for epsilon in (1e-5, 0.25, *((1e-300,) if dtype == np.float64 else (1e-12, 1e-36))):
        forward = _both(monkeypatch, lambda: layer.forward(x, epsilon, **named))  # noqa: B023
        backward = _both(monkeypatch, lambda: layer.vjp(x, epsilon, dy, **named))  # noqa: B023
        assert forward[0].dtype == forward[1].dtype == dtype
        for row in range(x.shape[0]):
            assert _normwise(forward[0][row], forward[1][row]) <= tolerance, (key, epsilon, row)
        compiled, reference = (found if isinstance(found, tuple) else (found,) for found in backward)
        for got, want in zip(compiled, reference, strict=True):
            assert got.dtype == want.dtype == dtype
            if got.ndim == 2:
                for row in range(x.shape[0]):
                    assert _normwise(got[row], want[row]) <= tolerance, (key, epsilon, row)
            else:
                assert _normwise(got, want) <= tolerance, (key, epsilon)


@needs_compiler
def test_compiled_results_agree_with_finite_differences():
    """Independently of either path: J^T g from the compiled vjp against central differences of
    the compiled forward, in random directions."""
    rng = np.random.default_rng(5)
    for key in ("layernorm", "rmsnorm", "layernorm_affine"):
        layer = getattr(numeric, key)
        x, g, v = rng.standard_normal((3, 64))
        parameters = tuple(rng.normal(1, 0.5, 64) for _ in LAYERS[key].parameters)
        found = layer.vjp(x, 1e-3, g, *parameters)
        dx = found[0] if isinstance(found, tuple) else found
        h = 1e-6
        ahead = layer.forward(x + h * v, 1e-3, *parameters)
        behind = layer.forward(x - h * v, 1e-3, *parameters)
        assert abs(dx @ v - g @ (ahead - behind) / (2 * h)) <= 1e-6 * (1 + abs(dx @ v)), key


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_non_finite_entry_is_named(dtype):
    x = np.ones((3, 5), dtype=dtype) * np.arange(5, dtype=dtype)
    for bad in (np.nan, np.inf, -np.inf):
        broken = x.copy()
        broken[2, 3] = bad
        with pytest.raises(ValueError, match="x must be finite"):
            numeric.layernorm.forward(broken, 1e-5)
        with pytest.raises(ValueError, match="x must be finite"):
            numeric.layernorm.vjp(broken, 1e-5, x)
        with pytest.raises(ValueError, match="dy must be finite"):
            numeric.layernorm.vjp(x, 1e-5, broken)


@needs_compiler
@pytest.mark.parametrize("key", EMITTABLE)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_compiled_layer_names_a_non_finite_entry_wherever_it_is(key, dtype):
    """Whichever entry is not finite, the first, a middle or the last (outside a partial mean's
    entries too), the compiled forward and vjp name x, and the vjp dy, as NumPy's path does."""
    assert numeric.backend(key) == "c"
    layer = getattr(numeric, key)
    size = 12
    x = np.linspace(-1, 2, 2 * size, dtype=dtype).reshape(2, size)
    named = {name: np.full(size, 1.5, dtype=dtype) for name, _ in LAYERS[key].parameters}
    for place in (0, size // 2, size - 1):
        for bad in (np.nan, np.inf, -np.inf):
            broken = x.copy()
            broken[1, place] = bad
            with pytest.raises(ValueError, match="x must be finite"):
                layer.forward(broken, 1e-5, **named)
            with pytest.raises(ValueError, match="x must be finite"):
                layer.vjp(broken, 1e-5, x, **named)
            # dy likewise, against an entry of x of 0 too (0 * inf is NaN in every sum of dy).
            for zero in (False, True):
                at = x.copy()
                at[1, place] = 0.0 if zero else at[1, place]
                with pytest.raises(ValueError, match="dy must be finite"):
                    layer.vjp(at, 1e-5, broken, **named)


@needs_compiler
def test_broadcast_epsilon_and_named_parameters_take_the_compiled_path(monkeypatch):
    """The same rows give the same bits however epsilon and the parameters are spelled."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 6))
    gain, bias = rng.standard_normal((2, 6))
    layer = numeric.layernorm_affine
    one = layer.forward(x, 1e-3, gain, bias)
    assert np.array_equal(one, layer.forward(x, np.full(4, 1e-3), gain=gain, bias=bias))
    assert np.array_equal(one, layer.forward(x, np.float64(1e-3), gain, bias=bias))
    stacked = layer.forward(x, np.array([[1e-3], [0.5]]), gain, bias)  # x broadcast to 2 batches
    assert stacked.shape == (2, 4, 6)
    assert np.array_equal(stacked[0], one)
    assert np.array_equal(stacked[1], layer.forward(x, 0.5, gain, bias))


def _run(code: str, **environment: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != native.ENVIRONMENT}
    env.update(environment, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)


def test_without_a_compiler_everything_runs_on_numpys_path(tmp_path):
    code = (
        "import numpy as np, numeric\n"
        "x = np.array([[1.0, 2.0, 4.0], [0.0, -1.0, 3.0]])\n"
        "print(numeric.backend(), numeric.layernorm.forward(x, 0.25).tolist())\n"
    )
    done = _run(code, CC=str(tmp_path / "no-such-compiler"), XDG_CACHE_HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    backend, values = done.stdout.split(" ", 1)
    assert backend == "numpy"
    x = np.array([[1.0, 2.0, 4.0], [0.0, -1.0, 3.0]])
    centered = x - x.mean(axis=1, keepdims=True)
    want = centered / np.sqrt((centered**2).mean(axis=1, keepdims=True) + 0.25)
    assert np.allclose(eval(values), want, rtol=1e-12)  # our own child's printed list


@pytest.mark.parametrize(("written", "said"), [("", "the compiler failed"), ("E" + "0123456789" * 300, None)])
def test_a_failed_build_says_the_end_of_what_the_compiler_wrote(tmp_path, written, said):
    """A compiler that fails: the BuildError holds the last 2000 characters of its standard error
    (where the first error usually is, after the notes), or says that it failed where it wrote
    nothing."""
    script = tmp_path / "failing-cc"
    (tmp_path / "said.txt").write_text(written)
    script.write_text(f"#!/bin/sh\ncat '{tmp_path / 'said.txt'}' >&2\nexit 1\n")
    script.chmod(0o755)
    with pytest.raises(native.BuildError) as raised:
        native._build("int main(void) { return 0; }", [str(script)])
    assert str(raised.value) == (said if said is not None else written[-2000:])


def test_requiring_the_compiled_path_without_a_compiler_is_an_error(tmp_path):
    code = "import numeric\nnumeric.backend()\n"
    done = _run(
        code, CC=str(tmp_path / "no-such-compiler"), XDG_CACHE_HOME=str(tmp_path), EPSILON_LAYERNORM_BACKEND="c"
    )
    assert done.returncode != 0
    assert "EPSILON_LAYERNORM_BACKEND=c" in done.stderr
    assert "no-such-compiler' is not found" in done.stderr


@needs_compiler
def test_a_tampered_library_in_the_cache_is_not_loaded(tmp_path):
    """The library is a cache entry with the cache's tag: bytes changed on disk are a miss, and
    the library is built again (a changed .so is never loaded)."""
    code = (
        "import numpy as np, numeric\nprint(numeric.backend(), numeric.layernorm.forward(np.array([1.0, 3.0]), 1e-9))\n"
    )
    first = _run(code, XDG_CACHE_HOME=str(tmp_path))
    assert first.returncode == 0, first.stderr
    name = hashlib.sha256(b"native library layernorm").hexdigest()[:40]
    entries = list((tmp_path / "epsilon-layernorm").rglob(name))
    assert entries, "the built library was not cached"
    for entry in entries:
        data = bytearray(entry.read_bytes())
        data[len(data) // 2] ^= 0xFF
        entry.write_bytes(bytes(data))
    second = _run(code, XDG_CACHE_HOME=str(tmp_path))
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert first.stdout.split()[0] == "c"


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_one_call_path_and_the_converting_path_give_the_same_bits(dtype):
    """A contiguous array with a float epsilon takes one call; a strided view, a list, an
    epsilon array take the converting path first: the same rows give the same bits."""
    rng = np.random.default_rng(11)
    wide = rng.standard_normal((3, 20)).astype(dtype)
    view = wide[:, ::2]
    copy = np.ascontiguousarray(view)
    g = rng.standard_normal((3, 10)).astype(dtype)
    layer = numeric.layernorm
    assert np.array_equal(layer.forward(view, 1e-3), layer.forward(copy, 1e-3))
    assert np.array_equal(layer.forward(copy.tolist(), np.array(1e-3)).astype(dtype), layer.forward(copy, 1e-3))
    assert np.array_equal(layer.vjp(view, 1e-3, g[:, :]), layer.vjp(copy, 1e-3, g))
    assert np.array_equal(layer.vjp(copy, 1e-3, np.asfortranarray(g)), layer.vjp(copy, 1e-3, g))
    assert layer.vjp(copy, 1e-3, g).dtype == dtype


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_parameters_given_plainly_take_one_call_with_the_converting_paths_bits(dtype, monkeypatch):
    """A gain and a bias given by position as contiguous arrays of x's dtype go straight to the
    library; by name, as lists, strided, or of another dtype they are converted first: the same
    bits either way, every gradient in x's dtype, and a non-finite one refused by name."""
    rng = np.random.default_rng(19)
    x, dy = (rng.standard_normal((4, 12)).astype(dtype) for _ in range(2))
    wide = rng.normal(1.0, 0.5, (2, 24)).astype(dtype)
    gain, bias = np.ascontiguousarray(wide[0, ::2]), wide[1, :12].copy()
    layer = numeric.facade("layernorm_affine")
    calls = []
    monkeypatch.setattr(native, "_prepared", lambda *a, p=native._prepared: calls.append(1) or p(*a))
    forward, backward = layer.forward(x, 1e-3, gain, bias), layer.vjp(x, 1e-3, dy, gain, bias)
    assert not calls  # one call each, nothing converted
    assert [found.dtype for found in (forward, *backward)] == [dtype] * 4
    for args, named in [
        ((), {"gain": gain, "bias": bias}),
        ((), {"gain": wide[0, ::2], "bias": bias.tolist()}),
        ((wide[0, ::2], bias), {}),
        ((gain, bias.tolist()), {}),
    ]:
        np.testing.assert_array_equal(layer.forward(x, 1e-3, *args, **named), forward)
        for got, want in zip(layer.vjp(x, 1e-3, dy, *args, **named), backward, strict=True):
            np.testing.assert_array_equal(got, want)
    assert calls  # those were converted
    per_row = np.stack([gain * (1 + row) for row in range(4)])
    compiled, reference = _both(monkeypatch, lambda: layer.forward(x, 1e-3, per_row, bias))
    assert _normwise(compiled, reference) <= (4e-6 if dtype == np.float32 else 1e-12)
    with pytest.raises(ValueError, match="given both by position and by name"):
        layer.forward(x, 1e-3, gain, bias, gain=gain)
    other = np.float32 if dtype == np.float64 else np.float64
    np.testing.assert_allclose(layer.forward(x, 1e-3, gain.astype(other), bias), forward, rtol=1e-6)
    for bad in (np.nan, np.inf):
        broken = gain.copy()
        broken[5] = bad
        with pytest.raises(ValueError, match="gain must be finite"):
            layer.forward(x, 1e-3, broken, bias)
        with pytest.raises(ValueError, match="gain must be finite"):
            layer.vjp(x, 1e-3, dy, broken, bias)


@needs_compiler
@pytest.mark.parametrize("shape", [(9,), (1, 9), (4, 9), (1, 1, 9), (2, 1, 9), (9, 9)])
def test_a_contiguous_x_of_any_batch_shape_takes_one_call(shape, monkeypatch):
    """One row, one vector, or a batch with a single row per batch: each goes straight to the
    library for forward, vjp and the Jacobian (nothing converted), with the bits of the same rows
    taken as a plain batch of rows."""
    rng = np.random.default_rng(23)
    x, dy = (rng.standard_normal(shape) for _ in range(2))
    layer = numeric.facade("layernorm")
    calls = []
    monkeypatch.setattr(native, "_prepared", lambda *a, p=native._prepared: calls.append(1) or p(*a))
    found = layer.forward(x, 1e-3), layer.vjp(x, 1e-3, dy), native.jacobian(layer, x, 1e-3)
    assert not calls
    assert found[2] is not None
    rows, upstream = x.reshape(-1, 9), dy.reshape(-1, 9)
    want = layer.forward(rows, 1e-3), layer.vjp(rows, 1e-3, upstream), layer.jacobian(rows, 1e-3)
    for got, expected in zip(found, want, strict=True):
        np.testing.assert_array_equal(got.reshape(expected.shape), expected)


@needs_compiler
def test_a_numpy_scalar_epsilon_keeps_numpys_dtype_rules():
    """np.float32 epsilon keeps float32 rows float32; np.float64 widens them, as on NumPy's path."""
    x = np.random.default_rng(12).standard_normal((2, 9)).astype(np.float32)
    g = np.ones_like(x)
    assert numeric.layernorm.forward(x, np.float32(1e-3)).dtype == np.float32
    assert numeric.layernorm.vjp(x, np.float32(1e-3), g).dtype == np.float32
    assert numeric.layernorm.forward(x, np.float64(1e-3)).dtype == np.float64
    with native.off():
        assert numeric.layernorm.forward(x, np.float64(1e-3)).dtype == np.float64
        assert numeric.layernorm.forward(x, np.float32(1e-3)).dtype == np.float32
    assert np.array_equal(numeric.layernorm.forward(x, np.float32(1e-3)), numeric.layernorm.forward(x, 1e-3))


@needs_compiler
@pytest.mark.parametrize("key", ["rmsnorm", "l2norm_clamped", "layernorm", "layernorm_affine"])
def test_an_upstream_gradient_or_gain_far_from_one_is_right(key, monkeypatch):
    """dy enters products with the row's entries: a dy of 1e300 (or 1e-300) against x of 1e10
    (1e-30) overflowed (underflowed) on the unscaled path, NaN where the truth is 1e289 (found
    from outside).  Such a row takes the scaled path, as on NumPy's."""
    x = np.array([[1.0, -2.0, 3.0, 0.5]])
    dy = np.array([[1.0, 1.5, -1.0, 2.0]])
    gain = np.array([1.0, -2.0, 1e-10, 0.3])
    cases = ((1e10, 1e-5, 1e300, 1e-150), (1e-30, 1e-70, 1e-300, 1e150), (1.0, 1e-5, 1e-200, 1e150))
    for x_scale, epsilon, dy_scale, gain_scale in cases:  # the true results all finite and normal
        named = {name: gain * gain_scale for name, _ in LAYERS[key].parameters}

        def vjp(x_scale=x_scale, epsilon=epsilon, dy_scale=dy_scale, named=named):
            return numeric.facade(key).vjp(x * x_scale, epsilon, dy * dy_scale, **named)

        compiled, reference = _both(monkeypatch, vjp)
        compiled, reference = (found if isinstance(found, tuple) else (found,) for found in (compiled, reference))
        for got, want in zip(compiled, reference, strict=True):
            assert np.isfinite(got).all(), (key, x_scale, dy_scale)
            assert _normwise(got, want) <= 1e-12, (key, x_scale, dy_scale)


@needs_compiler
def test_x_is_named_before_dy_whatever_row_each_is_in():
    x = np.arange(20.0).reshape(5, 4)
    dy = np.ones_like(x)
    x[3, 1] = np.nan
    dy[0, 2] = np.inf
    with pytest.raises(ValueError, match="x must be finite"):
        numeric.layernorm.vjp(x, 1e-5, dy)
    with native.off(), pytest.raises(ValueError, match="x must be finite"):
        numeric.layernorm.vjp(x, 1e-5, dy)


def test_backend_names_a_layer_or_refuses():
    with pytest.raises(KeyError, match="did you mean 'layernorm'"):
        numeric.backend("layernrom")
    with pytest.raises(KeyError):
        numeric.backend("")
    before = numeric.backend()
    with native.off():
        assert numeric.backend() == "numpy"
        with native.off():  # nested: the inner one leaves the outer one's choice
            assert numeric.backend() == "numpy"
        assert numeric.backend() == "numpy"
    assert numeric.backend() == before  # the compiled path, where there is one, is back


@needs_compiler
def test_a_compiler_command_with_words_is_used(tmp_path):
    command = native.compiler()
    code = "import numeric\nprint(numeric.backend())\n"
    done = _run(code, CC=f"{command[0]} -O1", XDG_CACHE_HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "c"


@needs_compiler
def test_an_authentic_entry_that_does_not_load_is_built_again(tmp_path):
    """A cached library this system cannot load (written elsewhere, another C library) with a
    valid tag: loaded, refused by the loader, built again and stored over it."""
    code = (
        "import hashlib\n"
        "from derivations import cache, codegen\n"
        "from numeric.kernels import native\n"
        "source = codegen.library('layernorm').encode()\n"
        "extra = hashlib.sha256(source + b'\\0' + native._identity(tuple(native.compiler()))).digest()\n"
        "cache.write('native library layernorm', b'\\x7fELF not a library', extra)\n"
        "import numeric\n"
        "print(numeric.backend(), cache.read('native library layernorm', extra)[:4] == b'\\x7fELF')\n"
        "print(len(cache.read('native library layernorm', extra)) > 1000)\n"
    )
    done = _run(code, XDG_CACHE_HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["c", "True", "True"]


@needs_compiler
@pytest.mark.parametrize("key", [key for key in EMITTABLE if not LAYERS[key].parameters])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jvp_of_a_symmetric_layer_is_the_compiled_vjp(key, dtype, monkeypatch):
    """J v = J^T v where J is symmetric (derived): the vjp's driver computes jvp, and agrees with
    NumPy's path; a layer whose J is not symmetric keeps NumPy's jvp."""
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((6, 33)) * np.array([1.0, 1e-3, 1e3, 1.0, 1.0, 1.0])[:, None]).astype(dtype)
    x[4] += 1e4
    v = rng.standard_normal((6, 33)).astype(dtype)
    taken = []

    def counted(*args, **kwargs):
        found = products(*args, **kwargs)
        taken.append(found is not None)
        return found

    products = native.products
    monkeypatch.setattr(native, "products", counted)
    compiled, reference = _both(monkeypatch, lambda: numeric.facade(key).jvp(x, 1e-3, v))
    assert any(taken) == jacobian.is_symmetric(LAYERS[key]), (key, taken)  # the library computed it
    assert compiled.dtype == reference.dtype == dtype
    tolerance = 4e-6 if dtype == np.float32 else 1e-12
    for row in range(x.shape[0]):
        assert _normwise(compiled[row], reference[row]) <= tolerance, (key, row)


@needs_compiler
@pytest.mark.parametrize("key", EMITTABLE)
def test_the_vjp_and_its_parameter_gradients_are_the_librarys(key, monkeypatch):
    """Every layer the emitted C takes has its vjp (with the parameters' gradients, where it has
    parameters) computed by the library, dy given as an array or as a list."""
    rng = np.random.default_rng(17)
    x, dy = rng.standard_normal((2, 3, 9))
    layer = numeric.facade(key)
    named = {name: rng.standard_normal(9) for name, _ in LAYERS[key].parameters}
    products = native.products
    for given in (dy, dy.tolist()):
        taken = []

        def counted(*args, taken=taken, **kwargs):
            found = products(*args, **kwargs)
            taken.append(found is not None)
            return found

        monkeypatch.setattr(native, "products", counted)
        layer.vjp(x, 1e-3, given, **named)
        assert any(taken), key


@needs_compiler
@pytest.mark.parametrize("key", EMITTABLE)
def test_the_vjp_is_linear_in_dy_at_every_scale_of_dy(key):
    """Every gradient is linear in dy: at dy times 1e-300, 1e300 or near the float64 maximum it is
    that multiple of the gradient at dy (found from outside: with a gain of 1e-20 the product
    gain * dy was subnormal, 1e-4 off; dy of 1.7e308 overflowed its sums; a true overflow was
    NaN, not a signed inf).  The compiled path takes dy at its own power-of-two scale."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal((3, 8)) * np.array([1e-30, 1.0, 1e10])[:, None]
    dy = rng.standard_normal((3, 8))
    named = {name: rng.normal(0, 1, 8) * 1e-20 for name, _ in LAYERS[key].parameters}
    layer = numeric.facade(key)
    unit = layer.vjp(x, 1e-5, dy, **named)
    unit = unit if isinstance(unit, tuple) else (unit,)
    for scale in (1e-300, 1e300, 1.7e308 / np.abs(dy).max()):
        found = layer.vjp(x, 1e-5, dy * scale, **named)
        found = found if isinstance(found, tuple) else (found,)
        for got, want in zip(found, unit, strict=True):
            with np.errstate(over="ignore"):
                want = np.asarray(want) * scale
            normal = np.isfinite(want) & (np.abs(want) >= np.finfo(float).tiny)
            assert np.isfinite(got[normal]).all(), (key, scale)
            assert np.allclose(got[normal], want[normal], rtol=1e-12, atol=0), (key, scale)
            overflowing = np.isinf(want)
            assert np.array_equal(got[overflowing], want[overflowing]), (key, scale)  # a signed inf, not NaN


@needs_compiler
@pytest.mark.parametrize("size", [16, 24])
def test_the_compiled_mean_sums_in_eight_lanes_combined_pairwise(size):
    """docs/codegen.md: each sum in 8 lanes, entry j in lane j mod 8, combined pairwise. With
    2^53 at entry 0 and -2^53 at entry 8 they cancel exactly in lane 0, and the ones elsewhere
    sum exactly (any other order adds a 1 to 2^53 first, which rounds it away): the mean of this
    row, (size - 2) / size, and so LayerNorm's output, come out exact to the last bits."""
    from fractions import Fraction

    x = np.ones(size)
    x[0], x[8] = 2.0**53, -(2.0**53)
    mean = Fraction(size - 2, size)
    spread = sum((Fraction(v) - mean) ** 2 for v in x) / size + Fraction(1, 4)
    exact = np.array([float((Fraction(v) - mean) / Fraction(np.sqrt(float(spread)))) for v in x])
    assert numeric.backend() == "c"
    found = numeric.layernorm.forward(x, 0.25)
    np.testing.assert_allclose(found, exact, rtol=4e-16)


# The layers whose library holds a Jacobian: J symmetric (assembled from its eigenstructure) and
# no parameter (`derivations.codegen._program.spectrum`).
JACOBIAN = [key for key in EMITTABLE if not LAYERS[key].parameters and jacobian.is_symmetric(LAYERS[key])]


@needs_compiler
def test_a_library_holds_a_jacobian_exactly_where_j_is_symmetric_and_takes_no_parameter():
    assert {"layernorm", "rmsnorm"} <= set(JACOBIAN)
    for key in EMITTABLE:
        lib = native.library(key)
        assert lib is not None
        assert sorted(lib.jacobian) == (["f32", "f64"] if key in JACOBIAN else []), key


def _jacobian_rows(rng, n, dtype):
    """Rows the compiled Jacobian takes: ordinary and far scales within its safe range, an
    offset within 4 spreads, each of n entries."""
    scales = np.array([1.0, 1e-3, 1e3, 1e-25, 1e25, 1.0])[:, None]
    x = rng.standard_normal((6, n)) * scales
    x[5] += 2.0 * np.max(np.abs(x[5] - x[5].mean()))
    return x.astype(dtype)


@needs_compiler
@pytest.mark.parametrize("key", JACOBIAN)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [2, 3, 37])
def test_the_compiled_jacobian_agrees_with_numpys_path(key, dtype, n, monkeypatch):
    rng = np.random.default_rng(n + sum(map(ord, key)))
    x = _jacobian_rows(rng, n, dtype)
    layer = numeric.facade(key)
    tolerance = 4e-6 if dtype == np.float32 else 1e-12
    from numeric.kernels import assemble

    for epsilon in (1e-5, 0.25, 1e-20):
        # The library takes a row exactly where NumPy's direct assembly does (at n = 37, every row).
        e = np.array([[epsilon]])
        took = [native.jacobian(layer, row, epsilon) is not None for row in x]
        assert took == [bool(assemble.direct(layer._c, row[None].astype(np.float64), e)[1][0, 0]) for row in x]
        assert sum(took) >= (6 if n > 3 else 3), (key, epsilon, took)
        compiled, reference = _both(monkeypatch, lambda: layer.jacobian(x, epsilon))  # noqa: B023
        assert compiled.dtype == reference.dtype == dtype
        assert compiled.shape == reference.shape == (6, n, n)
        for row in range(x.shape[0]):
            assert _normwise(compiled[row], reference[row]) <= tolerance, (key, epsilon, row)
        # One vector as a batch of one row.
        single = layer.jacobian(x[0], epsilon)
        assert single.shape == (n, n)
        if took[0]:
            np.testing.assert_array_equal(single, native.jacobian(layer, x, epsilon)[0] if all(took) else single)


@needs_compiler
@pytest.mark.parametrize("key", ["layernorm", "rmsnorm", "layernorm_std_eps"])
def test_the_compiled_jacobian_agrees_with_the_derived_entry_and_finite_differences(key):
    """Independently of NumPy's eigen path: J v against the derived entry J_ik and against
    central differences of the forward, in random directions."""
    rng = np.random.default_rng(11)
    layer = numeric.facade(key)
    x, v = rng.standard_normal((2, 4, 29))
    assert native.jacobian(layer, x, 1e-2) is not None
    found = np.einsum("...ik,...k->...i", layer.jacobian(x, 1e-2), v)
    entry = np.einsum("...ik,...k->...i", layer.jacobian_from_entry(x, 1e-2), v)
    h = 1e-6
    differences = (layer.forward(x + h * v, 1e-2) - layer.forward(x - h * v, 1e-2)) / (2 * h)
    for row in range(x.shape[0]):
        assert _normwise(found[row], entry[row]) <= 1e-13, (key, row)
        assert _normwise(found[row], differences[row]) <= 1e-7, (key, row)


@needs_compiler
@pytest.mark.parametrize("key", ["layernorm", "rmsnorm"])
def test_the_compiled_jacobian_takes_the_rows_numpys_direct_path_takes(key, monkeypatch):
    """The same safe scales as `numeric.kernels.assemble.direct`: the largest (centered) entry and
    the root of epsilon within 2**-100 .. 2**100, a mean within 4 spreads of 0, no vanishing
    direction.  At each edge, a row just inside is the library's and one just outside is not; in
    a batch with a row it does not take, each row's J has the bits it has alone (the library's
    for the safe rows, per-row epsilon too; NumPy's general path for the other)."""
    from derivations.codegen import _c
    from numeric.kernels import assemble, rescale

    assert (float.fromhex(_c.SAFE_LOW), float.fromhex(_c.SAFE_HIGH)) == assemble.SAFE == (2.0**-100, 2.0**100)
    assert _c.OFFSET == rescale.OFFSET == 4.0
    # A row the library computes as it is, NumPy's fused path does (its rows in double).
    assert rescale.fast_range(np.dtype(np.float64)) == (2.0**-_c.FAST_LIMIT, 2.0**_c.FAST_LIMIT)
    layer = numeric.facade(key)
    top, above = 2.0**100, np.nextafter(2.0**100, np.inf)
    low, below = 2.0**-100, np.nextafter(2.0**-100, 0)
    taken = {
        "largest at 2**100": (np.array([top, -top]), 1.0, True),
        "largest above it": (np.array([above, -above]), 1.0, False),
        "largest at 2**-100": (np.array([low, -low]), 2.0**-190, True),
        "largest below it": (np.array([below, -below]), 2.0**-190, False),
        "root of epsilon at 2**100": (np.array([1.0, -1.0]), top**2, True),
        "root of epsilon above it": (np.array([1.0, -1.0]), above**2, False),
        "root of epsilon below 2**-100": (np.array([1.0, -1.0]), below**2 * 0.5, False),
        "a constant row": (np.array([0.0, 0.0, 0.0]), 1.0, False),
    }
    if key == "layernorm":  # a mean 4 spreads from 0, and one beyond
        taken["mean at 4 spreads"] = (np.array([3.0, 5.0]), 1.0, True)
        taken["mean beyond"] = (np.array([3.0, 5.0]) + 2.0**-50, 1.0, False)
    for name, (x, epsilon, expected) in taken.items():
        assert (native.jacobian(layer, x, epsilon) is not None) == expected, (key, name)
    safe, unsafe = np.array([1.0, -2.0, 0.5]), np.array([1e-200, -2e-200, 0.5e-200])
    batch = np.stack([safe, unsafe, safe * 3])
    assert native.jacobian(layer, batch, 1e-3) is None
    together = layer.jacobian(batch, 1e-3)
    for index, row in enumerate(batch):
        np.testing.assert_array_equal(together[index], layer.jacobian(row, 1e-3))
    per_row = layer.jacobian(batch, np.array([1e-3, 1e-3, 0.5]))
    np.testing.assert_array_equal(per_row[2], native.jacobian(layer, batch[2], 0.5))
    compiled, reference = _both(monkeypatch, lambda: layer.jacobian(batch, 1e-3))
    np.testing.assert_array_equal(compiled[1], reference[1])  # the row no direct path takes
    assert _normwise(compiled, reference) <= 1e-15


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_read_only_arrays_take_the_compiled_path_with_the_same_bits(dtype):
    """A read-only x or dy (a broadcast view, a memory-mapped file) is passed to the library by
    the address of its data like a writable one: the same results, bit for bit."""
    rng = np.random.default_rng(17)
    x, dy = (rng.standard_normal((3, 40)).astype(dtype) for _ in range(2))
    frozen_x, frozen_dy = x.copy(), dy.copy()
    frozen_x.flags.writeable = frozen_dy.flags.writeable = False
    layer = numeric.facade("layernorm")
    np.testing.assert_array_equal(layer.forward(frozen_x, 1e-3), layer.forward(x, 1e-3))
    np.testing.assert_array_equal(layer.vjp(frozen_x, 1e-3, frozen_dy), layer.vjp(x, 1e-3, dy))
    np.testing.assert_array_equal(layer.jacobian(frozen_x, 1e-3), native.jacobian(layer, x, 1e-3))
    for array in (x, frozen_x):
        assert native._address(array) == array.ctypes.data


@needs_compiler
@pytest.mark.parametrize("key", EMITTABLE)
def test_a_float32_vjp_is_the_float64_one_rounded_once_at_every_scale_of_dy(key):
    """A float32 row is computed in double, as the float64 path computes its widened copy: the
    same double values, each rounded once to float32, whether or not dy is taken at a scale of its
    own (a float32 dy from the smallest subnormal to the largest float, against rows at their own
    scale and at extreme ones, a gain and a bias far from 1)."""
    rng = np.random.default_rng(sum(map(ord, key)) + 7)
    n = 37
    row_scales = np.array([1.0, 1e-30, 1e30, 1.0, 1.0])[:, None]
    x = (rng.standard_normal((5, n)) * row_scales).astype(np.float32)
    x[3] += np.float32(1e4)  # offset: taken at a scale
    named = {name: (rng.normal(0, 1, n) * 1e-20).astype(np.float32) for name, _ in LAYERS[key].parameters}
    layer = numeric.facade(key)
    for dy_scale in (1e-45, 1e-38, 1e-20, 1.0, 1e20, 3e38):
        dy = np.clip(rng.standard_normal((5, n)) * dy_scale, -3.4e38, 3.4e38).astype(np.float32)
        dy[:, 0] = np.float32(dy_scale)  # the scale itself, in every row
        for epsilon in (np.float32(2.0**-17), np.float32(0.25)):
            with np.errstate(over="ignore"):  # a gain's gradient beyond float32's range is inf
                narrow = layer.vjp(x, epsilon, dy, **named)
            wide = layer.vjp(x.astype(np.float64), np.float64(epsilon), dy.astype(np.float64), **named)
            narrow, wide = (found if isinstance(found, tuple) else (found,) for found in (narrow, wide))
            for got, want in zip(narrow, wide, strict=True):
                assert got.dtype == np.float32
                with np.errstate(over="ignore"):  # beyond float32's range: inf on both paths
                    want32 = np.asarray(want).astype(np.float32)
                same = (got == want32) | (np.isnan(got) & np.isnan(want32))
                assert same.all(), (key, dy_scale, epsilon, np.argwhere(~same)[:3])


@pytest.mark.parametrize("key", EMITTABLE)
def test_a_float32_row_at_its_own_scale_takes_no_pass_for_dy_s_scale(key):
    """dy's largest magnitude is found once in a float64 row's vjp at its own scale and once on
    the scaled path; a float32 row's vjp at its own scale skips it (a mean of dy checks dy):
    one pass of the five or six, the row read once less."""
    source = codegen.library(key)

    def body(head):
        start = source.index(f"{head}(")
        return source[start : source.index("\n}\n", start)]

    wide, narrow = body(f"\nint {key}_backward"), body(f"\nstatic int {key}_backward_f32")
    assert wide.count("top_dy = ") == 2
    assert narrow.count("top_dy = ") == 1
    assert narrow.count("return 2;") == wide.count("return 2;") == 2


@needs_compiler
@pytest.mark.parametrize("key", EMITTABLE)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_non_finite_tangent_is_named_v_on_both_paths(key, dtype, monkeypatch):
    """J v of a symmetric layer runs on the vjp's driver: a non-finite entry of v is named v, as
    on NumPy's path (found from outside: the compiled path said dy)."""
    x = np.linspace(-1, 2, 18, dtype=dtype).reshape(2, 9)
    named = {name: np.full(9, 1.5, dtype=dtype) for name, _ in LAYERS[key].parameters}
    v = np.ones_like(x)
    v[1, 4] = np.inf

    def said():
        try:
            numeric.facade(key).jvp(x, 1e-5, v, **named)
        except ValueError as error:
            return str(error)
        return None

    compiled, reference = _both(monkeypatch, said)
    assert compiled == reference == "v must be finite, got inf"


@pytest.mark.parametrize(("status", "named"), [(0, "x"), (1, "dy"), (6, "x"), (7, "dy")])
def test_a_driver_s_stop_names_the_array_its_status_names_where_numpy_sees_nothing(status, named):
    """A driver's status 2 r + k names array k (of x and dy).  Where NumPy's own check of each
    array finds every entry finite (a driver's view that differs from NumPy's), the status still
    names the argument, never another or an IndexError."""
    finite = [np.ones((4, 3)), np.ones((4, 3))]
    with pytest.raises(ValueError, match=f"^{named} must be finite$"):
        native._refuse(status, finite, ("x", "dy"))


@needs_compiler
@pytest.mark.parametrize(
    "case",
    ["epsilon of another dtype", "epsilon per row", "dy broadcast", "dy strided"],
)
def test_the_compiled_path_converts_its_inputs_a_block_at_a_time(case, monkeypatch):
    """Inputs a driver cannot take as they are (x to be widened by epsilon's dtype, dy broadcast or
    strided) are converted one block of rows at a time (issue 33: whole copies of x and dy made the
    affine vjp hold 6 times its input): beyond its outputs a call holds the same at 32 rows as at
    2, and at 32 rows at most a fifth of x and dy; and every row is the one NumPy's path gives."""
    monkeypatch.setattr(native, "BLOCK", 1 << 12)
    size, rng = 1 << 13, np.random.default_rng(8)
    layer = numeric.facade("layernorm_affine")
    gain, bias = rng.standard_normal((2, size)).astype(np.float32)

    def arguments(rows: int) -> tuple:
        x, dy = rng.standard_normal((2, rows, size)).astype(np.float32)
        epsilon = {"epsilon of another dtype": np.float64(0.1), "epsilon per row": np.full(rows, 0.1)}.get(case, 0.1)
        dy = {"dy broadcast": dy[0], "dy strided": np.asfortranarray(dy)}.get(case, dy)
        return x, epsilon, dy, gain, bias

    def held(args: tuple) -> float:
        """Peak traced memory beyond the outputs, in rows of x and dy."""
        layer.vjp(*args)  # anything made once, before measuring
        tracemalloc.start()
        out = layer.vjp(*args)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return (peak - sum(array.nbytes for array in out)) / (2 * size * 4)

    assert native.library("layernorm_affine") is not None
    two, many = held(arguments(2)), held(arguments(32))
    assert many <= 1.1 * two + 0.05, (two, many)
    assert many <= 0.2 * 32, many
    args = arguments(32)
    compiled, reference = _both(monkeypatch, lambda: layer.vjp(*args))
    for found, expected in zip(compiled, reference, strict=True):
        assert found.dtype == expected.dtype
        assert_agree(found, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max(), what=case)


@needs_compiler
@pytest.mark.parametrize(("scale", "epsilon", "upstream"), [(1.35e-220, 1.01e194, 2.24e28), (1e-160, 1e300, 1e300)])
def test_a_row_the_root_of_epsilon_dwarfs_has_the_gains_gradient_to_full_precision(scale, epsilon, upstream):
    """x / m near the subnormals (m at least the root of epsilon) times a large dy: a gain's
    gradient there is normal, but the driver's product of dy and the scaled row would have lost
    five digits (an outside check found 1.3e-5).  The driver refuses such a row and NumPy's path,
    which takes it at several scales, gives the gradient: within 1e-12 of the exact one (2e-13 at
    the second row)."""
    import mpmath

    rng = np.random.default_rng(5)
    x, dy = rng.standard_normal((2, 2, 16)) * np.array([scale, upstream])[:, None, None]
    gain, bias = rng.standard_normal(16), np.zeros(16)
    assert native.library("layernorm_affine") is not None
    _, dgain, _ = numeric.layernorm_affine.vjp(x, epsilon, dy, gain, bias)
    with mpmath.workdps(60):
        exact = [mpmath.mpf(0)] * 16
        for row, upstream_row in zip(x, dy, strict=True):
            entries = [mpmath.mpf(float(v)) for v in row]
            mu = sum(entries) / 16
            s = mpmath.sqrt(sum((v - mu) ** 2 for v in entries) / 16 + mpmath.mpf(epsilon))
            exact = [
                e + mpmath.mpf(float(d)) * (v - mu) / s for e, d, v in zip(exact, upstream_row, entries, strict=True)
            ]
        error = max(abs((mpmath.mpf(float(found)) - e) / e) for found, e in zip(dgain, exact, strict=True))
    assert error < 1e-12, float(error)


@needs_compiler
def test_a_gain_float32_cannot_hold_raises_no_floating_point_warning(monkeypatch):
    """A float64 gain beyond float32's range, with float32 x, is inf once rounded to x's dtype, as
    NumPy's path takes it: refused by the compiled path after the conversion, with no overflow
    warning of it (NumPy's path raises none), and the same results on both paths."""
    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    gain, bias = np.full(8, 1e300), np.zeros(8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled, reference = _both(monkeypatch, lambda: numeric.layernorm_affine.forward(x, 1e-5, gain, bias))
    assert compiled.dtype == reference.dtype == np.float32
    np.testing.assert_array_equal(compiled, reference)
