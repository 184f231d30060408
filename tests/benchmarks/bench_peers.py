"""``python tests/benchmarks/bench_peers.py``: the numeric functions against honest peers, in one run.

For every row (a layer, an operation, a shape and a dtype) the project's function and its peers
are timed in the same rounds, in an order shuffled afresh each round:
  - hand NumPy: the fastest fused NumPy we could write (``peers.py``: in place, einsum row sums,
    blocks of rows that fit in L2, outputs and scratch allocated once when it is built);
  - torch on 1 thread and on all threads (``torch.set_num_threads``, set before each timed batch):
    ``layer_norm`` / ``rms_norm``; the vjp is ``autograd.grad`` through a graph built once outside
    the timing; forward+vjp builds the graph each call; the hvp is ``torch.func.jvp`` of
    ``torch.func.grad``; the Jacobian ``torch.func.jacrev``;
  - ``jax.jit`` (XLA's own threads) of the forward, of ``jax.vjp``, of jvp-of-grad and of
    ``jax.jacrev``, where jax is importable (float64 with ``jax_enable_x64``);
  - the copy floor: ``np.copyto`` of x into a preallocated array, the memory-bandwidth bound;
  - the project itself on NumPy's path (``numeric.kernels.native.off``), where it has a compiled
    one: the "before" of the compiled path, in the same rounds.

Before any timing every peer's output is compared with the project's (``np.allclose``, rtol and
atol/max|project| of 1e-4 in float32, 1e-9 in float64); a peer that disagrees or fails is
reported and not timed.  A ratio is project / peer for one round (above 1: the project is
slower), given as the median and the interquartile range over the rounds, in CPU time
(``time.process_time``, every thread of the process) and in wall time.  A timed sample is a
batch of calls lasting at least a few milliseconds, divided by its count; its CPU time runs
until the threads it woke stop spinning, and the next batch starts only then.  The peak-memory rows
trace the NumPy paths with ``tracemalloc`` (the hand peer's preallocated buffers counted):
peak / x.nbytes, outputs included.  A benchmark, never a test.

  --quick          64x64 and one vector of 768 entries, 3 rounds: a smoke test
  --rows PATTERN   rows whose name has all the words of PATTERN, or matches it as a glob
                   (repeatable, or comma-separated); --list prints the names
  --rounds N       rounds per row (default 15)
  --all            the Hessian product at 8192x4096 too (left out by default: about 12 minutes)
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import functools
import gc
import math
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers

import numeric
from numeric.kernels import native

try:
    import torch
except ImportError:  # the torch columns are left out, with a note
    torch = None

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    JAX_NOTE = f"jax {jax.__version__}"
except ImportError as error:
    jax = jnp = None
    JAX_NOTE = f"jax not importable ({error}): its columns are skipped"

EPSILON = 1e-5
LAYERS = ("layernorm", "layernorm_affine", "rmsnorm")
OPS = ("forward", "vjp", "forward+vjp", "hvp")
DTYPES = ("float32", "float64")
SHAPES = ((4096, 768), (64, 4096), (8192, 4096), (768,))
QUICK_SHAPES = ((64, 64), (768,))
JACOBIAN_SIZE = 64
MEMORY_SHAPE, QUICK_MEMORY_SHAPE = (8192, 4096), (64, 64)
TOLERANCE = {"float32": 1e-4, "float64": 1e-9}
QUIET_PROBE = 5e-3  # seconds
ALL_THREADS = torch.get_num_threads() if torch is not None else 1


@dataclass(frozen=True)
class Row:
    layer: str
    op: str  # forward, vjp, forward+vjp, hvp or jacobian
    shape: tuple[int, ...]
    dtype: str
    memory: bool = False  # peak memory / input size instead of time

    @property
    def name(self) -> str:
        size = "x".join(map(str, self.shape))
        return f"{self.layer} {self.op} {size} {self.dtype}" + (" peak-memory" if self.memory else "")


@dataclass(frozen=True)
class Inputs:
    x: np.ndarray
    dy: np.ndarray
    v: np.ndarray
    epsilon: np.floating  # of x's dtype, so that float32 stays float32 in the project
    params: tuple[np.ndarray, ...]  # (gain, bias) for layernorm_affine, else ()


@dataclass
class Contestant:
    name: str
    call: Callable[[], Any]
    threads: int | None = None  # torch.set_num_threads before each of its batches
    checked: bool = True  # its output is compared with the project's (not the copy floor's)


def rows(quick: bool, every: bool = False) -> list[Row]:
    """The rows; the Hessian product at the largest shape (about 2 minutes a row) only with ``every``."""
    shapes, memory_shape = (QUICK_SHAPES, QUICK_MEMORY_SHAPE) if quick else (SHAPES, MEMORY_SHAPE)
    timed = [
        Row(layer, op, shape, d)
        for shape in shapes
        for d in DTYPES
        for layer in LAYERS
        for op in OPS
        if every or quick or not (op == "hvp" and shape == max(SHAPES, key=math.prod))
    ]
    jacobians = [Row(layer, "jacobian", (JACOBIAN_SIZE,), d) for d in DTYPES for layer in LAYERS]
    memory = [Row(layer, op, memory_shape, d, memory=True) for d in DTYPES for layer in LAYERS for op in OPS]
    return timed + jacobians + memory


def selected(row: Row, patterns: list[str]) -> bool:
    words = set(row.name.split())
    for pattern in patterns:
        if any(c in pattern for c in "*?[") and fnmatch.fnmatch(row.name, pattern):
            return True
        if set(pattern.split()) <= words:
            return True
    return not patterns


@functools.lru_cache(maxsize=2)
def _arrays(shape: tuple[int, ...], dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(sum(shape))
    return tuple(rng.standard_normal(shape).astype(dtype) for _ in range(3))


def inputs(row: Row) -> Inputs:
    x, dy, v = _arrays(row.shape, row.dtype)
    params: tuple[np.ndarray, ...] = ()
    if row.layer == "layernorm_affine":
        rng = np.random.default_rng(1)
        n = row.shape[-1]
        params = (
            (1 + 0.1 * rng.standard_normal(n)).astype(row.dtype),
            (0.1 * rng.standard_normal(n)).astype(row.dtype),
        )
    return Inputs(x, dy, v, np.dtype(row.dtype).type(EPSILON), params)


def _flat(result: Any) -> tuple[np.ndarray, ...]:
    """Any contestant's result as a tuple of NumPy arrays (torch tensors and jax arrays converted)."""
    if isinstance(result, tuple | list):
        return tuple(a for part in result for a in _flat(part))
    if torch is not None and isinstance(result, torch.Tensor):
        return (result.detach().numpy(),)
    return (np.asarray(result),)


# The peers, one function per family.  Each returns the contestants for a row.


def project(row: Row, data: Inputs) -> Contestant:
    module = getattr(numeric, row.layer)
    x, e, dy, v, p = data.x, data.epsilon, data.dy, data.v, data.params
    calls = {
        "forward": lambda: module.forward(x, e, *p),
        "vjp": lambda: module.vjp(x, e, dy, *p),
        "forward+vjp": lambda: (module.forward(x, e, *p), module.vjp(x, e, dy, *p)),
        "hvp": lambda: module.hvp(x, e, dy, v, *p),
        "jacobian": lambda: module.jacobian(x, e, *p),
    }
    return Contestant("project", calls[row.op])


def numpy_peers(row: Row, data: Inputs) -> list[Contestant]:
    """The hand-fused NumPy of peers.py; for the Jacobian, its closed form."""
    kernel = peers.build(row.op, row.layer, data.x, float(data.epsilon), data.dy, data.v, data.params)
    return [Contestant("closed form" if row.op == "jacobian" else "hand NumPy", kernel)]


def torch_peers(row: Row, data: Inputs) -> list[Contestant]:
    if torch is None:
        return []
    functional = torch.nn.functional
    n = row.shape[-1]
    tx, tdy, tv = (torch.from_numpy(a) for a in (data.x, data.dy, data.v))
    params = [torch.from_numpy(p) for p in data.params]
    leaves = [p.detach().requires_grad_() for p in params]

    def layer(t: Any, *p: Any) -> Any:
        if row.layer == "rmsnorm":
            return functional.rms_norm(t, (n,), eps=EPSILON)
        return functional.layer_norm(t, (n,), *p, eps=EPSILON)

    def vjp() -> Any:
        return torch.autograd.grad(graph, (leaf, *leaves), tdy, retain_graph=True)

    def forward_vjp() -> Any:
        fresh = tx.detach().requires_grad_()
        y = layer(fresh, *leaves)
        return (y.detach(), *torch.autograd.grad(y, (fresh, *leaves), tdy))

    def hvp() -> Any:
        return torch.func.jvp(torch.func.grad(lambda t: (layer(t, *params) * tdy).sum()), (tx,), (tv,))[1]

    leaf = tx.detach().requires_grad_()
    graph = layer(leaf, *leaves) if row.op == "vjp" else None
    calls = {
        "forward": lambda: layer(tx, *params),
        "vjp": vjp,
        "forward+vjp": forward_vjp,
        "hvp": hvp,
        "jacobian": lambda: torch.func.jacrev(lambda t: layer(t, *params))(tx),
    }
    call = calls[row.op]
    threads = sorted({1, ALL_THREADS})
    return [Contestant(f"torch, {k} thread{'s' * (k > 1)}", call, threads=k) for k in threads]


def jax_peers(row: Row, data: Inputs) -> list[Contestant]:
    if jax is None:
        return []

    def layer(x: Any, *p: Any) -> Any:
        if row.layer == "rmsnorm":
            return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPSILON)
        c = x - jnp.mean(x, axis=-1, keepdims=True)
        y = c * jax.lax.rsqrt(jnp.mean(c * c, axis=-1, keepdims=True) + EPSILON)
        return y * p[0] + p[1] if p else y

    def vjp(x: Any, dy: Any, v: Any, *p: Any) -> Any:
        return jax.vjp(layer, x, *p)[1](dy)

    def forward_vjp(x: Any, dy: Any, v: Any, *p: Any) -> Any:
        y, back = jax.vjp(layer, x, *p)
        return y, back(dy)

    def hvp(x: Any, dy: Any, v: Any, *p: Any) -> Any:
        return jax.jvp(jax.grad(lambda t: jnp.sum(layer(t, *p) * dy)), (x,), (v,))[1]

    functions = {
        "forward": lambda x, dy, v, *p: layer(x, *p),
        "vjp": vjp,
        "forward+vjp": forward_vjp,
        "hvp": hvp,
        "jacobian": lambda x, dy, v, *p: jax.jacrev(layer)(x, *p),
    }
    compiled = jax.jit(functions[row.op])
    arguments = [jax.device_put(a) for a in (data.x, data.dy, data.v, *data.params)]
    return [Contestant("jax.jit", lambda: jax.block_until_ready(compiled(*arguments)))]


def copy_peer(row: Row, data: Inputs) -> list[Contestant]:
    target = np.empty_like(data.x)
    return [Contestant("copy floor", lambda: np.copyto(target, data.x), checked=False)]


def numpy_path(row: Row, data: Inputs) -> list[Contestant]:
    """The project itself on NumPy's path (`numeric.kernels.native.off`): the "before" of the
    compiled path, in the same run.  Only where the project has a compiled path (forward, vjp,
    and the Jacobian of a layer the library holds one for, or whose base it is)."""
    if row.op not in ("forward", "vjp", "forward+vjp", "jacobian") or numeric.backend(row.layer) != "c":
        return []
    call = project(row, data).call

    def before() -> Any:
        with native.off():
            return call()

    return [Contestant("project, NumPy's path", before)]


FAMILIES = (numpy_path, numpy_peers, torch_peers, jax_peers, copy_peer)


# Checking and timing.


def agreement(reference: tuple[np.ndarray, ...], found: tuple[np.ndarray, ...], dtype: str) -> tuple[bool, float]:
    """Whether found agrees with the project's reference, and the largest error relative to the
    largest entry of each output."""
    if len(found) != len(reference) or any(a.shape != b.shape for a, b in zip(found, reference, strict=False)):
        return False, math.inf
    tolerance, worst, agrees = TOLERANCE[dtype], 0.0, True
    for ours, theirs in zip(reference, found, strict=True):
        scale = float(np.max(np.abs(ours))) or 1.0
        worst = max(worst, float(np.max(np.abs(ours.astype(np.float64) - theirs))) / scale)
        agrees &= bool(np.allclose(theirs, ours, rtol=tolerance, atol=tolerance * scale))
    return agrees, worst


def _call(contestant: Contestant) -> Any:
    if contestant.threads is not None:
        torch.set_num_threads(contestant.threads)
    return contestant.call()


def _quiet(limit: float = 0.25) -> float:
    """Wait until no thread of the process spins any more (thread pools of torch, OpenBLAS or XLA
    busy-wait for milliseconds after their work), and return process_time at that moment.  The
    kernel adds a thread's CPU time to the process's only at a tick (4 ms) or a context switch,
    so a quiet probe lasts longer than a tick."""
    deadline = time.perf_counter() + limit
    while True:
        before = time.process_time()
        time.sleep(QUIET_PROBE)
        if time.process_time() - before < 0.1 * QUIET_PROBE or time.perf_counter() > deadline:
            return before


def _batch(contestant: Contestant, number: int) -> tuple[float, float]:
    """CPU and wall seconds per call over a batch of ``number`` calls.  The CPU time runs on
    until the process is quiet again, so that a pool's spinning after the batch is charged to
    the contestant that started it, not to the next one."""
    if contestant.threads is not None:
        torch.set_num_threads(contestant.threads)
    call = contestant.call
    _quiet()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(number):
        call()
    wall = time.perf_counter() - wall
    return (_quiet() - cpu) / number, wall / number


@dataclass
class Timing:
    cpu: list[float]
    wall: list[float]


def timed(contestants: list[Contestant], rounds: int, batch_seconds: float, seed: int) -> dict[str, Timing]:
    """Per-call CPU and wall times of each contestant over ``rounds`` rounds, shuffled each round."""
    numbers = {}
    for contestant in contestants:
        _, wall = _batch(contestant, 1)  # after the check's call: warm, and the size of a batch
        numbers[contestant.name] = max(1, math.ceil(batch_seconds / max(wall, 1e-9)))
    order = list(contestants)
    shuffle = random.Random(seed).shuffle
    times = {c.name: Timing([], []) for c in contestants}
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            shuffle(order)
            for contestant in order:
                cpu, wall = _batch(contestant, numbers[contestant.name])
                times[contestant.name].cpu.append(cpu)
                times[contestant.name].wall.append(wall)
    finally:
        gc.enable()
        if torch is not None:
            torch.set_num_threads(ALL_THREADS)
    return times


def spread(ours: list[float], theirs: list[float]) -> str:
    """The paired per-round ratios ours / theirs: median (interquartile range)."""
    ratios = [a / b for a, b in zip(ours, theirs, strict=True) if b > 0]
    if not ratios:
        return "n/a"
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}"
    low, _, high = statistics.quantiles(ratios, n=4, method="inclusive")
    return f"{statistics.median(ratios):.2f} ({low:.2f}-{high:.2f})"


def seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def _checked(row: Row, contestants: list[Contestant]) -> tuple[list[Contestant], dict[str, str]]:
    """The contestants whose output agrees with the project's (the project first), and a note for each."""
    ours = contestants[0]
    reference = _flat(_call(ours))
    kept, notes = [ours], {}
    for peer in contestants[1:]:
        try:
            result = _flat(_call(peer))
        except Exception as error:  # a peer that fails is reported, not timed
            notes[peer.name] = f"**fails**: {type(error).__name__}: {str(error)[:60]}; not timed"
            continue
        if not peer.checked:
            notes[peer.name] = "n/a"
            kept.append(peer)
            continue
        agrees, worst = agreement(reference, result, row.dtype)
        notes[peer.name] = f"yes ({worst:.0e})" if agrees else f"**NO** ({worst:.0e}); not timed"
        if agrees:
            kept.append(peer)
    return kept, notes


def contestants(row: Row, data: Inputs) -> tuple[list[Contestant], dict[str, str]]:
    found, notes = [project(row, data)], {}
    for family in FAMILIES:
        try:
            found += family(row, data)
        except Exception as error:
            notes[family.__name__] = f"**cannot build**: {type(error).__name__}: {str(error)[:60]}"
    return found, notes


def time_row(row: Row, rounds: int, batch_seconds: float) -> list[str]:
    """The table lines of one timed row: one per peer."""
    data = inputs(row)
    everyone, notes = contestants(row, data)
    try:
        kept, checks = _checked(row, everyone)
    except Exception as error:
        return [f"| {row.name} | **project fails**: {type(error).__name__}: {str(error)[:80]} | | | | | | |"]
    notes.update(checks)
    times = timed(kept, rounds, batch_seconds, seed=zlib.crc32(row.name.encode()))
    ours = times["project"]
    cpu, wall = statistics.median(ours.cpu), statistics.median(ours.wall)
    lines = []
    for name, note in notes.items():
        first = not lines
        label = f"| {row.name} | {seconds(cpu)} | {seconds(wall)} " if first else "| | | "
        theirs = times.get(name)
        if theirs is None:
            lines.append(f"{label}| {name} | {note} | | | |")
            continue
        peer_wall = seconds(statistics.median(theirs.wall))
        ratios = f"{spread(ours.cpu, theirs.cpu)} | {spread(ours.wall, theirs.wall)}"
        lines.append(f"{label}| {name} | {note} | {peer_wall} | {ratios} |")
    return lines


def _peak(build: Callable[[], Callable[[], Any]]) -> tuple[float, Any]:
    """Peak bytes traced while building a callable and calling it once, and its result."""
    gc.collect()
    tracemalloc.start()
    try:
        result = build()()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, result


def memory_row(row: Row) -> list[str]:
    """Peak memory / x.nbytes of the project and of the hand NumPy peer (buffers included)."""
    data = inputs(row)
    size = data.x.nbytes
    ours, reference = _peak(lambda: project(row, data).call)
    hand, result = _peak(lambda: numpy_peers(row, data)[0].call)
    agrees, worst = agreement(_flat(reference), _flat(result), row.dtype)
    check = f"yes ({worst:.0e})" if agrees else f"**NO** ({worst:.0e})"
    return [f"| {row.name} | {ours / size:.2f} | {hand / size:.2f} | {check} | n/a (not traced) |"]


def header(rounds: int) -> None:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    torch_note = (
        f"torch {torch.__version__}, all threads = {ALL_THREADS}"
        if torch is not None
        else "torch not importable: its columns are skipped"
    )
    print(f"# Honest peers ({now}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs)\n")
    print(f"numpy {np.__version__}; {torch_note}; {JAX_NOTE}; numeric's path: {numeric.backend()}.")
    print(
        f"{rounds} rounds per row, order shuffled each round; ratio = project / peer per round, "
        "median (interquartile range); above 1 the project is slower.  CPU time counts every thread.  "
        "Hand NumPy reuses buffers allocated when it is built; torch's vjp reuses a graph built once.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64x64 and n = 768, 3 rounds: a smoke test")
    parser.add_argument("--rows", action="append", default=[], help="words or glob of row names (repeatable)")
    parser.add_argument("--rounds", type=int, help="rounds per row (default 15, 3 with --quick)")
    parser.add_argument("--list", action="store_true", help="print the row names and stop")
    parser.add_argument("--all", action="store_true", help="the Hessian product at 8192x4096 too (about 12 minutes)")
    arguments = parser.parse_args()
    patterns = [p.strip() for group in arguments.rows for p in group.split(",") if p.strip()]
    chosen = [row for row in rows(arguments.quick, arguments.all) if selected(row, patterns)]
    if arguments.list:
        print("\n".join(row.name for row in chosen))
        return
    rounds = arguments.rounds or (3 if arguments.quick else 15)
    batch_seconds = 1e-3 if arguments.quick else 10e-3
    started = time.perf_counter()
    header(rounds)
    timed_rows = [row for row in chosen if not row.memory]
    if timed_rows:
        print("| row | project CPU | project wall | peer | agrees (err) | peer wall | CPU ratio | wall ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for row in timed_rows:
            print("\n".join(time_row(row, rounds, batch_seconds)), flush=True)
    memory_rows = [row for row in chosen if row.memory]
    if memory_rows:
        print("\n| row | project peak / input | hand NumPy peak / input | agrees | torch, jax |")
        print("|---|---|---|---|---|")
        for row in memory_rows:
            print("\n".join(memory_row(row)), flush=True)
    print(f"\n{len(chosen)} rows in {time.perf_counter() - started:.0f} s.")


if __name__ == "__main__":
    main()
