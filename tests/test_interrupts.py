"""Ctrl-C and SIGTERM end a command and every process it started: at once, in one line.

Each command runs in its own session, as a terminal's foreground job does, so that Ctrl-C is
a SIGINT to its whole process group and what is left of the group afterwards can be seen.
"""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COLD = {**os.environ, "EPSILON_LAYERNORM_NO_CACHE": "1"}  # the derivations run, not read from the cache

# When Ctrl-C comes: seeded, from just after the interpreter is up to well into the derivations in
# the worker processes.  The first few run in the fast tier, all 50 in the slow one.
_RANDOM = random.Random(28)
_MOMENTS = [round(_RANDOM.uniform(0.3, 12.0), 2) for _ in range(50)]
MOMENTS = [at if number < 3 else pytest.param(at, marks=pytest.mark.slow) for number, at in enumerate(_MOMENTS)]


def _start(*argv: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "derivations", *argv],
        cwd=ROOT,
        env=COLD,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _running(group: int) -> bool:
    """Whether a process of ``group`` still runs.  With /proc, one that has ended and waits to be
    reaped (a zombie: an orphaned worker is reaped by init, which in a container may take a
    while) runs nothing and does not count; elsewhere any process of the group does."""
    if not Path("/proc/self/stat").exists():
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()  # after "pid (command)"
        except OSError:
            continue  # ended while listed
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            return True
    return False


def _group_left(group: int, within: float) -> bool:
    """Whether a process of ``group`` is still running after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        if not _running(group):
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.02)


def test_a_running_group_is_seen_and_an_ended_one_is_not_though_unreaped():
    process = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert _group_left(process.pid, 0.1)
        os.kill(process.pid, signal.SIGKILL)
        assert not _group_left(process.pid, 5.0)  # a zombie until the wait below
        if Path("/proc/self/stat").exists():
            assert Path(f"/proc/{process.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    finally:
        process.kill()
        process.wait()


def _ended_by(process: subprocess.Popen, sent: float) -> tuple[int, float, str]:
    """The status, seconds from ``sent`` to the exit, and stderr; every process of the group is killed after."""
    try:
        status = process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        status = None
    took = time.monotonic() - sent
    left = _group_left(process.pid, 2.0)
    if status is None or left:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    stderr = process.stderr.read() if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    assert status is not None, f"still running 10 s after the signal; stderr: {stderr[-2000:]}"
    assert not left, "a process of the command's group outlived it by 2 s"
    return status, took, stderr


def _interrupt(process: subprocess.Popen, at: float) -> tuple[int, float, str]:
    time.sleep(at)
    sent = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
    return _ended_by(process, sent)


@pytest.mark.parametrize("at", MOMENTS)
def test_ctrl_c_during_a_cold_derivation_ends_every_process_in_one_line(at):
    status, took, stderr = _interrupt(_start("--no-cache"), at)
    if status == 0:
        pytest.skip(f"the derivation finished within {at} s")
    assert status == 130, stderr
    assert took < 2.0
    assert stderr.splitlines() == ["python -m derivations: interrupted"]


def _child_of(pid: int, within: float) -> int:
    """A child process of ``pid``, once there is one (Linux: /proc)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            found = children.read().split()
        if found:
            return int(found[0])
        time.sleep(0.02)
    raise AssertionError(f"no child process of {pid} within {within} s")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the child in /proc")
def test_ctrl_c_during_a_bounded_check_ends_every_process_in_one_line():
    process = _start("check", "--no-cache", "--timeout", "60", "norm(J, 2) <= 1/sqrt(epsilon)")
    _child_of(process.pid, 60)  # the claim is being decided in the bounded child
    # At once: under a loaded machine's make test the child was found late, and decided within 0.5 s.
    status, took, stderr = _interrupt(process, 0.02)
    assert status == 130, stderr
    assert took < 2.0
    assert stderr.splitlines() == ["python -m derivations check: interrupted"]


_SLEEPER = """
import os, sys, time
from derivations.claims import bounded

def work():
    print(os.getpid(), flush=True)
    time.sleep(60)

bounded.run(work, 100)
"""


def test_sigterm_to_the_parent_of_a_bounded_check_ends_its_child():
    """As `timeout N python -m derivations check ...` does: the signal goes to the parent alone."""
    process = subprocess.Popen(
        [sys.executable, "-c", _SLEEPER], cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert process.stdout is not None
    child = int(process.stdout.readline())
    process.terminate()
    process.wait(timeout=10)
    process.stdout.close()
    assert child != process.pid
    assert not _group_left(process.pid, 2.0), "the bounded child outlived its parent"


class _Opaque:
    """A value that is not data: unpickling one in the parent would run its class's code."""


def test_a_bounded_result_comes_back_as_data_and_never_as_an_object_of_any_class():
    from derivations.claims import Claim, Verdict, bounded, check

    with pytest.raises(bounded.Exceeded, match=r"^undecided: TypeError: a bounded result holds a _Opaque, which is"):
        bounded.run(_Opaque, 60)
    claim = Claim("slope_at_zero == 1/sqrt(epsilon)", assumptions=("n >= 3",), id="a")
    verdict = check(claim, timeout=60)
    assert type(verdict) is Verdict
    assert verdict.claim == claim
    assert verdict.verdict == "proved"
    assert isinstance(verdict.quantities, tuple)


def test_ctrl_c_while_the_command_imports_its_modules_is_one_line(tmp_path):
    """A Ctrl-C in the first tens of milliseconds, while python -m derivations imports its own
    modules, printed a traceback through the imports: the handler is now installed first.  The
    import of derivations.cache is held up here (a sitecustomize delays it), so the interrupt
    lands inside it every time."""
    marker = tmp_path / "importing"
    (tmp_path / "sitecustomize.py").write_text(
        "import sys, time\n"
        "class Slow:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'derivations.cache':\n"
        f"            open({str(marker)!r}, 'w').close()\n"
        "            time.sleep(5)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Slow())\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    process = subprocess.Popen(
        [sys.executable, "-m", "derivations"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline, "the import was never reached"
        assert process.poll() is None, "the command ended before the import"
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=10)
    assert process.returncode == 130
    assert err.decode().strip().splitlines() == ["python -m derivations: interrupted"]


def _sleep_then(seconds: float, value: object):
    def work():
        time.sleep(seconds)
        return value

    return work


def test_bounded_children_run_side_by_side_each_within_its_own_budget():
    """`each` yields results as children finish, `run_many` puts them back in order, and one
    child past its budget is an `Exceeded` in its place while the others still come back."""
    from derivations.claims import bounded

    functions = [_sleep_then(0.6, "slow"), _sleep_then(0.0, [1]), _sleep_then(30, "never"), _sleep_then(0.0, {"a": 2})]
    finished = [index for index, _ in bounded.each(functions[:2], 20, workers=2)]
    assert finished == [1, 0]  # the quick one first, though it was started second
    results = bounded.run_many(functions, 3, workers=3)
    assert results[:2] == ["slow", [1]]
    assert results[3] == {"a": 2}
    assert isinstance(results[2], bounded.Exceeded)
    assert str(results[2]) == "undecided within 3 s"


def _gone(pid: int) -> bool:
    """True when ``pid`` is no child of this process any more: reaped, not a zombie left to wait for."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_bounded_children_are_reaped_however_they_end(monkeypatch):
    """Every child the sandbox forks is waited for, whether it returned, raised, ran out of time or
    memory, or was abandoned when the caller stopped reading its results: none is left a zombie."""
    from derivations.claims import bounded

    forked = []
    fork = os.fork

    def recorded():
        pid = fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recorded)

    def fails():
        raise ValueError("no")

    assert bounded.run(lambda: 7, 60) == 7
    with pytest.raises(bounded.Exceeded, match="ValueError: no"):
        bounded.run(fails, 60)
    with pytest.raises(bounded.Exceeded, match="undecided within"):
        bounded.run(_sleep_then(30, None), 0.5)
    with pytest.raises(bounded.Exceeded, match="MiB of memory"):
        bounded.run(lambda: bytearray(1 << 30), 60, memory=64 << 20)
    results = bounded.each([_sleep_then(0.0, 1), _sleep_then(30, 2), _sleep_then(30, 3)], 60, workers=3)
    assert next(results) == (0, 1)
    results.close()  # the caller stops reading: the two still running are ended and reaped
    assert len(forked) == 7
    assert [pid for pid in forked if not _gone(pid)] == []
    assert [pid for pid in forked if Path(f"/proc/{pid}").exists()] == []


@pytest.mark.parametrize(("workers", "cores", "most"), [(3, 1, 3), (None, 2, 2), (None, 1, 1), (9, 1, 5), (0, 4, 1)])
def test_bounded_children_run_as_many_at_once_as_asked_or_one_a_processor(monkeypatch, workers, cores, most):
    """A worker count is speed, not output; pinned here all the same: ``workers`` children at once,
    by default one a processor this process may run on, at least one, never more than the work."""
    from derivations.claims import bounded

    if hasattr(os, "sched_getaffinity"):
        assert bounded.processors() == len(os.sched_getaffinity(0))
    running, seen = [0], []
    start, reap = bounded._start, bounded._reap

    def started(*args):
        running[0] += 1
        seen.append(running[0])
        return start(*args)

    def reaped(pid):
        running[0] -= 1
        return reap(pid)

    monkeypatch.setattr(bounded, "_start", started)
    monkeypatch.setattr(bounded, "_reap", reaped)
    monkeypatch.setattr(bounded, "processors", lambda: cores)
    assert bounded.run_many([_sleep_then(0.2, n) for n in range(5)], 60, workers=workers) == list(range(5))
    assert max(seen) == most
    assert running == [0]


def test_one_bounded_child_at_a_time_when_asked():
    from derivations.claims import bounded

    start = time.monotonic()
    assert bounded.run_many([_sleep_then(0.4, 1), _sleep_then(0.4, 2)], 20, workers=1) == [1, 2]
    assert time.monotonic() - start >= 0.8


def test_claims_checked_side_by_side_get_the_verdicts_checked_one_at_a_time():
    from derivations.claims import Claim, check, check_each

    claims = [
        Claim("slope_at_zero == 1/sqrt(epsilon)", assumptions=("n >= 3",), id="a"),
        Claim("norm(y) <= sqrt(n) / 2", id="b"),
        Claim("x", id="c", problem="the entry has no claim"),
        Claim("norm(y) == sqrt(n) * sqrt(q / (q + epsilon))", layer="layernorm", id="d"),
    ]
    together = list(check_each(claims, timeout=60, workers=2))
    assert [v.claim.id for v in together] == ["a", "b", "c", "d"]
    assert [v.verdict for v in together] == ["proved", "refuted", "error", "proved"]
    assert [(v.verdict, v.detail) for v in together] == [(v.verdict, v.detail) for v in map(check, claims)]


# Without fork the budget runs the call in this process, and the SIGKILL below would end pytest.
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the budget needs fork")
def test_a_child_killed_before_it_answers_is_an_exceeded_budget_never_a_value():
    """A child the kernel kills (as the out-of-memory killer does) sends nothing back: that is an
    `Exceeded`, raised by `run` and in its place from `run_many`, never a value a caller could
    mistake for the claim's result."""
    from derivations.claims import bounded

    def killed():
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(bounded.Exceeded, match=r"ended without a result"):
        bounded.run(killed, 60)
    first, second = bounded.run_many([killed, lambda: 5], 60, workers=2)
    assert isinstance(first, bounded.Exceeded)
    assert second == 5
