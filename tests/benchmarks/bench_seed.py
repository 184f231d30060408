"""``make bench``: derived functions against the seed's hand-typed ones, in one run.

Prints wall times and ratios (ours / seed); the machine is noisy, so each
figure is the best of several repeats.  A benchmark, never a timed test.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import timeit
from functools import partial
from pathlib import Path
from typing import Any

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
    # A fresh process each, with whatever the derivation cache holds (cache_rows times it cold and warm).
    sympy_import = _cold([sys.executable, "-c", "import sympy"])
    core = _cold([sys.executable, "-m", "derivations", "--layer", "layernorm"])
    every = _cold([sys.executable, "-m", "derivations"])
    print(f"import sympy alone                              {sympy_import:6.3f} s")
    print(f"python -m derivations --layer layernorm         {core:6.3f} s   (target <= 1.5 s)")
    print(f"python -m derivations (all layers)              {every:6.3f} s")
    for claim in ("slope_at_zero == 1/sqrt(epsilon)", "spectral_norm == 1/sqrt(q + epsilon)"):
        seconds = _cold([sys.executable, "-m", "derivations", "check", claim], allowed=(0, 1))
        print(f"check {claim!r:<47}{seconds:6.3f} s   (target < 2 s)")

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

    forwards()
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
    """numeric.layernorm.jacobian (assembled from the derived eigenstructure; a vector at a safe
    scale directly, `numeric.kernels.assemble.direct`) against the closed form typed in NumPy.  The
    target is 2x at n = 64, where a call's fixed cost, not its arithmetic, sets the time."""
    print(f"\n{'jacobian':<10}{'derived':>12}{'closed form':>14}{'ratio':>9}   (target: <= 2 at n = 64)")
    for size in (8, 64, 768):
        x = np.random.default_rng(size).standard_normal(size)
        numeric.layernorm.jacobian(x, 1e-5)
        repeats = 200 if size < 768 else 20
        a = min(timeit.repeat(lambda x=x: numeric.layernorm.jacobian(x, 1e-5), number=repeats, repeat=5)) / repeats
        b = min(timeit.repeat(lambda x=x: _closed_form_jacobian(x, 1e-5), number=repeats, repeat=5)) / repeats
        note = "" if a / b <= 2 else "   not met: a call's fixed cost, not its arithmetic"
        print(f"n = {size:<6}{a * 1e3:>10.3f}ms{b * 1e3:>12.3f}ms{a / b:>9.2f}{note}")


SHAPE = (4096, 768)
EPS = 1e-5
# Rounds of a few milliseconds each: with 7, a ratio (RMSNorm's float32 forward) moved by up
# to 0.1 from one run of the same code to the next here.  A Hessian product (about a second)
# takes 7.
ROUNDS = 21
HVP_ROUNDS = 7


def _medians(functions: dict[str, Any], rounds: int = ROUNDS) -> dict[str, float]:
    """Median wall time of each function over ``rounds`` interleaved rounds (one call each per
    round), so that load from other processes falls on all of them alike."""
    for function in functions.values():
        function()  # compile, allocate and warm up outside the timing
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def _torch() -> Any:
    """PyTorch on one thread, or None where it is not installed (make crosscheck installs it)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def _row(label: str, times: dict[str, float], ours: str, peer: str, target: float | None) -> None:
    torch_time = times.get("torch")
    shown = f"{torch_time * 1e3:>8.1f}ms{times[ours] / torch_time:>7.2f}" if torch_time else f"{'n/a':>10}{'':>7}"
    goal = f"   (target <= {target})" if target else ""
    ratio = times[ours] / times[peer]
    print(f"{label:<28}{times[ours] * 1e3:>8.1f}ms{times[peer] * 1e3:>8.1f}ms{ratio:>7.2f}{shown}{goal}")


def _plain_layernorm(x: np.ndarray, eps: float) -> np.ndarray:
    # The peer: NumPy's plain expression, (x - mean) / sqrt(var + eps).
    return (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)


def _plain_rmsnorm(x: np.ndarray, eps: float) -> np.ndarray:
    # The peer: x / sqrt(mean(x**2) + eps).
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def _fused_vjp(x: np.ndarray, eps: float, dy: np.ndarray) -> np.ndarray:
    # The peer: LayerNorm's input gradient (dy - mean(dy) - y mean(dy y)) / s, fused by hand.
    c = x - x.mean(axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt(np.mean(c * c, axis=-1, keepdims=True) + eps)
    y = c * inv
    return (dy - dy.mean(axis=-1, keepdims=True) - y * np.mean(dy * y, axis=-1, keepdims=True)) * inv


def _forward_vjp(x: np.ndarray, eps: Any, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return numeric.layernorm.forward(x, eps), numeric.layernorm.vjp(x, eps, dy)


def _peer_forward_vjp(x: np.ndarray, eps: float, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _plain_layernorm(x, eps), _fused_vjp(x, eps, dy)


def _header(what: str) -> None:
    print(f"\n{what:<28}{'derived':>10}{'peer':>10}{'ratio':>7}{'torch':>10}{'ratio':>7}")


def forwards() -> None:
    """numeric.<layer>.forward (one fused program, generated) against NumPy's plain expression
    and PyTorch's one-thread kernel, at (4096, 768) in float32 and float64."""
    torch = _torch()
    _header(f"forward {SHAPE}")
    for key, plain, native in (
        ("layernorm", _plain_layernorm, "layer_norm"),
        ("rmsnorm", _plain_rmsnorm, "rms_norm"),
    ):
        for dtype in (np.float32, np.float64):
            x = np.random.default_rng(1).standard_normal(SHAPE).astype(dtype)
            eps = dtype(EPS)
            functions = {"ours": partial(getattr(numeric, key).forward, x, eps), "peer": partial(plain, x, eps)}
            if torch is not None:
                kernel = getattr(torch.nn.functional, native)
                functions["torch"] = partial(kernel, torch.from_numpy(x), (SHAPE[-1],), eps=EPS)
            _row(f"{key} {np.dtype(dtype).name}", _medians(functions), "ours", "peer", 1.3)


def backward() -> None:
    """numeric.layernorm.vjp, forward + vjp and hvp (generated from the derived formulas) against a
    hand-fused NumPy peer, PyTorch's one-thread autograd and torch.func forward-over-reverse."""
    torch = _torch()
    rng = np.random.default_rng(2)
    _header(f"layernorm {SHAPE}")
    for dtype in (np.float32, np.float64):
        x, dy, v = (rng.standard_normal(SHAPE).astype(dtype) for _ in range(3))
        eps, name = dtype(EPS), np.dtype(dtype).name
        vjp = {"ours": partial(numeric.layernorm.vjp, x, eps, dy), "peer": partial(_fused_vjp, x, EPS, dy)}
        both = {"ours": partial(_forward_vjp, x, eps, dy), "peer": partial(_peer_forward_vjp, x, EPS, dy)}
        if torch is not None:
            vjp["torch"], both["torch"], hvp_torch = _torch_peers(torch, x, dy, v)
        _row(f"vjp {name}", _medians(vjp), "ours", "peer", 1.5)
        _row(f"forward + vjp {name}", _medians(both), "ours", "peer", 1.5)
        hvp = {"ours": partial(numeric.layernorm.hvp, x, eps, dy, v)}
        if torch is not None:
            hvp["torch"] = hvp_torch
        times = _medians(hvp, HVP_ROUNDS)
        peer = (
            f"{times['torch'] * 1e3:>8.1f}ms{times['ours'] / times['torch']:>7.2f}   (torch.func jvp of grad)"
            if torch is not None
            else f"{'n/a':>10}"
        )
        print(f"{'hvp ' + name:<28}{times['ours'] * 1e3:>8.1f}ms{'':>17}{peer}")


def _torch_peers(torch: Any, x: np.ndarray, dy: np.ndarray, v: np.ndarray) -> tuple[Any, Any, Any]:
    """PyTorch's backward of layer_norm (graph built once), forward + backward, and the Hessian
    product as torch.func forward-over-reverse, on one thread."""
    tx, tdy, tv = torch.from_numpy(x), torch.from_numpy(dy), torch.from_numpy(v)
    size = (x.shape[-1],)
    leaf = tx.clone().requires_grad_()
    out = torch.nn.functional.layer_norm(leaf, size, eps=EPS)

    def backward_only() -> None:
        torch.autograd.grad(out, leaf, tdy, retain_graph=True)

    def forward_backward() -> None:
        fresh = tx.clone().requires_grad_()
        torch.autograd.grad(torch.nn.functional.layer_norm(fresh, size, eps=EPS), fresh, tdy)

    def pairing(values: Any) -> Any:
        return (torch.nn.functional.layer_norm(values, size, eps=EPS) * tdy).sum()

    def hvp() -> None:
        torch.func.jvp(torch.func.grad(pairing), (tx,), (tv,))

    return backward_only, forward_backward, hvp


def sizes() -> None:
    """Files and lines of code under derivations/ and numeric/."""
    root = Path(__file__).resolve().parents[2]
    for folder in ("derivations", "numeric"):
        files = sorted((root / folder).rglob("*.py"))
        lines = sum(len(f.read_text().splitlines()) for f in files)
        print(f"{folder + '/':<13}{len(files):>3} files {lines:>6} lines")


# The layers `python -m derivations` printed when issue 12 measured it, and the work it does for any.
_FIVE = ("layernorm", "layernorm_affine", "layernorm_std_eps", "rmsnorm", "rmsnorm_eps_outside")
_ROWS = "from derivations import catalog; catalog.rows(%s)"

_CLAIM = "slope_at_zero == 1/sqrt(epsilon)"
# The claim's own work, timed inside a process whose derivations are warm.
_PROOF_WORK = (
    "import sys, time; from derivations.claims import Claim, check; from derivations.claims.confirm import confirm; "
    "claim = Claim(sys.argv[1], 'layernorm', (), id='bench'); start = time.perf_counter(); "
    "check(claim, confirm); print(time.perf_counter() - start)"
)

# The first numeric call of a fresh process (derivation from the cache, compilation), timed inside it.
_FIRST_CALL = (
    "import time; import numeric; start = time.perf_counter(); numeric.response(0.5, 0.25); "
    "print(time.perf_counter() - start)"
)


def cache_rows(rounds: int = 5) -> None:
    """The derivation cache's targets: paired whole-process runs in a cache of this run's own, medians."""
    import os
    import statistics
    import tempfile

    from derivations import LAYERS
    from derivations import cache as derivation_cache

    with tempfile.TemporaryDirectory() as home:
        warm = {**os.environ, "XDG_CACHE_HOME": home}
        warm.pop(derivation_cache.ENVIRONMENT, None)
        cold = {**warm, derivation_cache.ENVIRONMENT: "1"}
        python = sys.executable
        commands = {
            "import sympy": ([python, "-c", "import sympy"], warm),
            "cold derive": ([python, "-m", "derivations"], cold),
            # The same rows for the five layers issue 12 timed, cold, against every layer's.
            "cold rows, five layers": ([python, "-c", _ROWS % (_FIVE,)], cold),
            "cold rows, every layer": ([python, "-c", _ROWS % "tuple(catalog.LAYERS)"], cold),
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
        first_call = statistics.median(
            float(
                subprocess.run([python, "-c", _FIRST_CALL], env=warm, capture_output=True, text=True, check=True).stdout
            )
            for _ in range(rounds)
        )
    median = {name: statistics.median(found) for name, found in times.items()}
    floor = median["import sympy"]
    print(f"\nderivation cache, medians of {rounds} paired runs (cold: {derivation_cache.ENVIRONMENT}=1)")
    print(f"import sympy alone                 {floor:6.3f} s")
    print(f"cold python -m derivations         {median['cold derive']:6.3f} s   {median['cold derive'] / floor:5.2f}x")
    five, every = median["cold rows, five layers"], median["cold rows, every layer"]
    print(
        f"cold rows of the five layers       {five:6.3f} s\n"
        f"cold rows of every layer ({len(LAYERS)})    {every:6.3f} s   {every / five:5.2f}x the five   (target <= 2x)"
    )
    print(
        f"warm python -m derivations         {median['warm derive']:6.3f} s   "
        f"{median['warm derive'] / floor:5.2f}x   (target <= 1.3x import sympy)"
    )
    print(f"warm python -m figures             {median['warm figures']:6.3f} s           (target <= 1.5 s)")
    print(
        f"warm check {_CLAIM!r}  {median['warm claim']:6.3f} s   proof work {proof:.3f} s   "
        f"(target <= 1.3 x import sympy + proof work = {1.3 * floor + proof:.3f} s)"
    )
    print(f"first numeric.response call, fresh process, warm cache {first_call:6.3f} s   (issue 13: 0.22-0.25 s)")


# Claims a reviewer checks one at a time, proved and refuted, scalar and matrix, pattern and general.
_AUDITED = (
    ("slope_at_zero == 1/sqrt(epsilon)", "layernorm", ()),
    ("spectral_norm == 1/sqrt(q + epsilon)", "layernorm", ()),
    ("norm(J, 2) <= 1/sqrt(epsilon)", "layernorm", ()),
    ("J @ c == c / s", "layernorm", ()),
    ("limit(response, t, oo) == sqrt(3/2)", "layernorm", ()),
    ("response**2 > 1", "layernorm", ("q > 3*epsilon",)),
    ("gamma_max > 0", "layernorm_affine", ()),
    ("eigen_x == epsilon/s**3", "rmsnorm", ()),
    # The constructs of issue 30: the layer at another input, entrywise, bounds from the eigenvalues.
    ("layernorm(a*x + b*ones) == y", "layernorm", ("a > 0", "epsilon == 0")),
    ("layernorm(a*x + b*ones) == y", "layernorm", ("a > 0",)),
    ("all(abs(y) <= sqrt(n - 1))", "layernorm", ()),
    ("dot(v, J @ v) >= 0", "layernorm", ()),
    ("norm(J, 2) <= gamma_max/sqrt(epsilon)", "layernorm_affine", ()),
    ("rank(J) == n - 1", "layernorm", ()),
)
_WARM_CLAIM = "slope_at_zero == 1/sqrt(epsilon) + {k} - {k}"


def claims_rows(rounds: int = 7) -> None:
    """The audit of every verdict and z3's decisions: their share of a warm single claim, whose
    text is new each round (the output cache misses; the derivations are warm)."""
    from derivations.claims import Claim, check, solver
    from derivations.claims import checker as claims

    warm = []
    for k in range(rounds + 1):
        start = time.perf_counter()
        command = [sys.executable, "-m", "derivations", "check", _WARM_CLAIM.format(k=1000 + k)]
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        warm.append(time.perf_counter() - start)
    whole = statistics.median(warm[1:])

    def timed(claim: Claim) -> float:
        start = time.perf_counter()
        check(claim)
        return time.perf_counter() - start

    audited = claims._audited
    spent = [0.0]  # seconds inside z3, every question the checker and the domain ask it

    def clocked(function):
        def inner(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        return inner

    asked = (solver.holds_everywhere, solver.satisfiable)
    solver.holds_everywhere, solver.satisfiable = map(clocked, asked)
    rows = []
    try:
        for text, layer, assumptions in _AUDITED:
            claim = Claim(text, layer, assumptions)
            verdict = check(claim).verdict  # warm: derivations, compiled terms
            spent[0] = 0.0
            with_all = statistics.median(timed(claim) for _ in range(rounds))
            in_z3 = spent[0] / rounds
            claims._audited = lambda claim, verdict, domain: verdict
            without_audit = statistics.median(timed(claim) for _ in range(rounds))
            claims._audited = audited
            rows.append((text, layer, verdict, with_all, with_all - without_audit, in_z3))
    finally:
        claims._audited = audited
        solver.holds_everywhere, solver.satisfiable = asked
    print(f"\nclaims, medians of {rounds}: a warm single new claim (python -m derivations check) {whole:6.3f} s")
    print(f"{'claim':<44}{'verdict':>10}{'check':>9}{'audit':>9}{'z3':>9}{'z3 share':>10}{'audit / warm claim':>20}")
    for text, layer, verdict, total, audit, in_z3 in rows:
        shown = f"{text} [{layer}]"[:43]
        share = in_z3 / total if total else 0.0
        print(f"{shown:<44}{verdict:>10}{total:>8.3f}s{audit:>8.3f}s{in_z3:>8.3f}s{share:>10.1%}{audit / whole:>19.1%}")
    worst = max(row[4] for row in rows)
    print(f"the audit adds at most {worst / whole:.1%} to a warm single claim (target <= 25%)")


if __name__ == "__main__":
    main()
    cache_rows()
    claims_rows()
