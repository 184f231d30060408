"""``make bench``: derived functions against the seed's hand-typed ones, in one run.

Prints wall times and ratios (ours / seed); the machine is noisy, so each
figure is the best of several repeats.  A benchmark, never a timed test.
"""

from __future__ import annotations

import subprocess
import sys
import time
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import seed_reference

import numeric

POINTS = 1_000_000
REPEATS = 7


def _best(function, *args) -> float:
    return min(timeit.repeat(lambda: function(*args), number=1, repeat=REPEATS))


def _cold(command: list[str], allowed: tuple[int, ...] = (0,)) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        status = subprocess.run(command, stdout=subprocess.DEVNULL).returncode
        times.append(time.perf_counter() - start)
        if status not in allowed:
            raise SystemExit(f"{' '.join(command)} exited with {status}")
    return min(times)


def main() -> None:
    sympy_import = _cold([sys.executable, "-c", "import sympy"])
    core = _cold([sys.executable, "-m", "derivations", "--layer", "layernorm"])
    every = _cold([sys.executable, "-m", "derivations"])
    print(f"import sympy alone                              {sympy_import:6.3f} s")
    print(f"cold python -m derivations --layer layernorm    {core:6.3f} s   (target <= 1.5 s)")
    print(f"cold python -m derivations (all five layers)    {every:6.3f} s")
    for claim in ("slope_at_zero == 1/sqrt(epsilon)", "spectral_norm == 1/sqrt(q + epsilon)"):
        seconds = _cold([sys.executable, "-m", "derivations", "check", claim], allowed=(0, 1))
        print(f"cold check {claim!r:<42}{seconds:6.3f} s   (target < 2 s)")

    t = np.random.default_rng(0).uniform(-3, 3, POINTS)
    epsilon = 0.25
    print(f"\n{POINTS:,} points, epsilon = {epsilon}, best of {REPEATS}")
    print(f"{'function':<10}{'derived':>12}{'seed':>12}{'ratio':>9}")
    for name in ("response", "slope"):
        ours = getattr(numeric, name)
        seed = getattr(seed_reference, name)
        ours(t, epsilon)  # compile once, outside the timing
        a, b = _best(ours, t, epsilon), _best(seed, t, epsilon)
        print(f"{name:<10}{a * 1e3:>10.2f}ms{b * 1e3:>10.2f}ms{a / b:>9.2f}")

    # A batch through the vector path (validation, rescaling by max|x|, float64
    # inside, float32 out) against NumPy's plain float32 expression.
    batch = np.random.default_rng(1).standard_normal((4096, 768)).astype(np.float32)
    eps32 = np.float32(1e-5)

    def plain(values: np.ndarray, e: np.float32) -> np.ndarray:
        mean = values.mean(axis=-1, keepdims=True)
        variance = values.var(axis=-1, keepdims=True)
        return (values - mean) / np.sqrt(variance + e)

    numeric.layernorm.forward(batch, eps32)
    a = min(timeit.repeat(lambda: numeric.layernorm.forward(batch, eps32), number=1, repeat=3))
    b = min(timeit.repeat(lambda: plain(batch, eps32), number=1, repeat=3))
    print(f"\nforward on a (4096, 768) float32 batch: {a * 1e3:.1f} ms; numpy's plain expression {b * 1e3:.1f} ms;")
    print(f"ratio {a / b:.2f}")
    jacobians()
    backward()
    sizes()


def _closed_form_jacobian(x: np.ndarray, eps: float) -> np.ndarray:
    # The peer: LayerNorm's Jacobian I/s - 1 1^T/(n s) - c c^T/(n s^3), typed in NumPy.
    n = x.shape[-1]
    c = x - x.mean()
    s = np.sqrt(np.mean(c * c) + eps)
    return np.eye(n) / s - 1.0 / (n * s) - np.outer(c, c) / (n * s**3)


def jacobians() -> None:
    """numeric.layernorm.jacobian (assembled from the derived eigenstructure) against the closed form."""
    print(f"\n{'jacobian':<10}{'derived':>12}{'closed form':>14}{'ratio':>9}   (target <= 2)")
    for size in (8, 64, 768):
        x = np.random.default_rng(size).standard_normal(size)
        numeric.layernorm.jacobian(x, 1e-5)
        repeats = 200 if size < 768 else 20
        a = min(timeit.repeat(lambda x=x: numeric.layernorm.jacobian(x, 1e-5), number=repeats, repeat=5)) / repeats
        b = min(timeit.repeat(lambda x=x: _closed_form_jacobian(x, 1e-5), number=repeats, repeat=5)) / repeats
        print(f"n = {size:<6}{a * 1e3:>10.3f}ms{b * 1e3:>12.3f}ms{a / b:>9.2f}")


def _fused_vjp(x: np.ndarray, eps: float, dy: np.ndarray) -> np.ndarray:
    # The peer: LayerNorm's input gradient (dy - mean(dy) - y mean(dy y)) / s, fused by hand.
    c = x - x.mean(axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt(np.mean(c * c, axis=-1, keepdims=True) + eps)
    y = c * inv
    return (dy - dy.mean(axis=-1, keepdims=True) - y * np.mean(dy * y, axis=-1, keepdims=True)) * inv


def backward() -> None:
    """numeric.layernorm.vjp (generated from the derived formula) against a hand-fused NumPy peer,
    and against PyTorch's single-thread autograd where torch is installed (make crosscheck installs it)."""
    rng = np.random.default_rng(2)
    print(
        f"\n{'vjp (4096, 768)':<18}{'derived':>10}{'fused':>10}{'ratio':>8}{'torch':>10}{'ratio':>8}   (target <= 1.5)"
    )
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((4096, 768)).astype(dtype)
        dy = rng.standard_normal((4096, 768)).astype(dtype)
        numeric.layernorm.vjp(x, 1e-5, dy)
        a = min(timeit.repeat(lambda x=x, dy=dy: numeric.layernorm.vjp(x, 1e-5, dy), number=1, repeat=3))
        b = min(timeit.repeat(lambda x=x, dy=dy: _fused_vjp(x, 1e-5, dy), number=1, repeat=3))
        torch_time = _torch_backward(x, dy)
        shown = f"{torch_time * 1e3:>8.1f}ms{a / torch_time:>8.2f}" if torch_time else f"{'n/a':>10}{'':>8}"
        print(f"{np.dtype(dtype).name:<18}{a * 1e3:>8.1f}ms{b * 1e3:>8.1f}ms{a / b:>8.2f}{shown}")


def _torch_backward(x: np.ndarray, dy: np.ndarray) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    tx = torch.from_numpy(x).requires_grad_()
    tdy = torch.from_numpy(dy)
    out = torch.nn.functional.layer_norm(tx, (x.shape[-1],), eps=1e-5)

    def run() -> None:
        torch.autograd.grad(out, tx, tdy, retain_graph=True)

    return min(timeit.repeat(run, number=1, repeat=3))


def sizes() -> None:
    """Files and lines of code under derivations/ and numeric/."""
    root = Path(__file__).resolve().parents[2]
    for folder in ("derivations", "numeric"):
        files = sorted((root / folder).rglob("*.py"))
        lines = sum(len(f.read_text().splitlines()) for f in files)
        print(f"{folder + '/':<13}{len(files):>3} files {lines:>6} lines")


_CLAIM = "slope_at_zero == 1/sqrt(epsilon)"
# The claim's own work, timed inside a process whose derivations are warm.
_PROOF_WORK = (
    "import sys, time; from derivations.claims import Claim, check; from numeric.confirm import confirm; "
    "claim = Claim(sys.argv[1], 'layernorm', (), id='bench'); start = time.perf_counter(); "
    "check(claim, confirm); print(time.perf_counter() - start)"
)


def cache_rows(rounds: int = 5) -> None:
    """The derivation cache's targets: paired whole-process runs in a cache of this run's own, medians."""
    import os
    import statistics
    import tempfile

    from derivations import _cache

    with tempfile.TemporaryDirectory() as home:
        warm = {**os.environ, "XDG_CACHE_HOME": home}
        warm.pop(_cache.ENVIRONMENT, None)
        cold = {**warm, _cache.ENVIRONMENT: "1"}
        python = sys.executable
        commands = {
            "import sympy": ([python, "-c", "import sympy"], warm),
            "cold derive": ([python, "-m", "derivations"], cold),
            "warm derive": ([python, "-m", "derivations"], warm),
            "warm figures": ([python, "-m", "figures", "--out", str(Path(home) / "figures")], warm),
            "warm claim": ([python, "-m", "derivations", "check", _CLAIM], warm),
        }
        for command, environment in commands.values():  # fill the cache
            subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, check=True)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(rounds):
            for name, (command, environment) in commands.items():
                start = time.perf_counter()
                subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, check=True)
                times[name].append(time.perf_counter() - start)
        proof = statistics.median(
            float(
                subprocess.run(
                    [python, "-c", _PROOF_WORK, _CLAIM], env=warm, capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(rounds)
        )
    median = {name: statistics.median(found) for name, found in times.items()}
    floor = median["import sympy"]
    print(f"\nderivation cache, medians of {rounds} paired runs (cold: {_cache.ENVIRONMENT}=1)")
    print(f"import sympy alone                 {floor:6.3f} s")
    print(f"cold python -m derivations         {median['cold derive']:6.3f} s   {median['cold derive'] / floor:5.2f}x")
    print(
        f"warm python -m derivations         {median['warm derive']:6.3f} s   "
        f"{median['warm derive'] / floor:5.2f}x   (target <= 1.3x import sympy)"
    )
    print(f"warm python -m figures             {median['warm figures']:6.3f} s           (target <= 1.5 s)")
    print(
        f"warm check {_CLAIM!r}  {median['warm claim']:6.3f} s   proof work {proof:.3f} s   "
        f"(target <= 1.3 x import sympy + proof work = {1.3 * floor + proof:.3f} s)"
    )


if __name__ == "__main__":
    main()
    cache_rows()
