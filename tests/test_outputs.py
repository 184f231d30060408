"""Outputs: a figure set and the report are written whole or not at all; every command fails in one line."""

import errno
import os
import re
import runpy
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from grids import slow
from matplotlib.figure import Figure

import figures
import figures.__main__ as figures_command
import figures._output
from derivations import cache as derivation_cache
from derivations import catalog, claims
from figures import _pdflatex, report
from numeric.checks import verify
from numeric.checks.agreement import AgreementError

ROOT = Path(__file__).resolve().parents[1]
OUT = Path("build") / "figures"
NAMES = ("a.png", "b.png", "c.png")
SET = {f"build/figures/{name}" for name in NAMES}
CLAIM = "slope_at_zero == 1/sqrt(epsilon)"


def _tiny(name):
    def draw():
        figure = Figure(figsize=(1, 1), dpi=20)
        figure.add_subplot().plot([0, 1])
        return figure

    return SimpleNamespace(FILENAME=name, draw=draw, __doc__=f"Figure {name}")


def _derivations_only(real):
    """The cache's ``read`` or ``write`` for a derivation's entry (``derivations.<function>(...)``) alone."""
    return lambda entry, *rest: real(entry, *rest) if entry.startswith("derivations.") else None


@pytest.fixture
def fast(monkeypatch):
    """Three tiny figures, a verification that passes at once, and no example claims to check."""
    tiny = tuple(_tiny(name) for name in NAMES)
    for module in (figures, figures_command, report):
        monkeypatch.setattr(module, "FIGURES", tiny)
    monkeypatch.setattr(verify, "run", lambda seed=0: {"agreement": 1})
    monkeypatch.setattr(claims, "load", lambda path: [])
    # The derivations are read from the run's cache (derived again, every layer, they were most of
    # these tests' time); a command's output and the figure set are made every time: stand-ins are
    # never recalled from, nor kept in, the cache under the real sources' key.
    for name in ("read", "write"):
        real = getattr(derivation_cache, name)
        monkeypatch.setattr(derivation_cache, name, _derivations_only(real))
    # The tiny figures' stand-ins are no images pdflatex can include; test_figures compiles the real report.
    monkeypatch.setattr(_pdflatex, "available", lambda: False)


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _python_m(module, argv, monkeypatch):
    """``python -m module argv`` in this process: its ``__main__`` block, then the flush at exit."""
    name = f"{module}.__main__" if module in ("derivations", "figures") else module
    monkeypatch.setattr(sys, "argv", [name, *argv])
    monkeypatch.delitem(sys.modules, name, raising=False)  # runpy runs a fresh copy; a loaded one would warn

    this, leave = os.getpid(), os._exit

    def exit_now(code):  # `cli.finish` ends a real process with os._exit: here, end the command alone
        if os.getpid() != this:  # a process the command forked (a pool's worker) still leaves
            leave(code)
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", exit_now)
    try:
        runpy.run_module(name, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as stop:
        status = stop.code
    sys.stdout.flush()  # what the interpreter does at exit: a failure here is a traceback
    return status


# What each case sets up in its (current) folder before the command runs.


def _old(tmp, *names):
    (tmp / OUT).mkdir(parents=True, exist_ok=True)
    for name in names:
        (tmp / OUT / name).write_bytes(f"old {name}".encode())


def _file_at_out(tmp, monkeypatch):
    (tmp / "build").mkdir()
    (tmp / OUT).write_text("not a folder")


def _refusing(code):
    """The output folder refuses new files, as an unwritable or read-only one does."""

    def arrange(tmp, monkeypatch):
        _old(tmp, *NAMES)
        real = os.open

        def refuse(path, flags, *args, **kwargs):
            if flags & os.O_CREAT and Path(os.fsdecode(path)).parent.resolve() == (tmp / OUT).resolve():
                raise OSError(code, os.strerror(code), os.fspath(path))
            return real(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)

    return arrange


def _failing_on_second(name, code):
    """``name`` (a savefig, an fsync or a rename) fails at its second call, as on a full or failing disk."""

    def arrange(tmp, monkeypatch):
        _old(tmp, *NAMES)
        owner = Figure if name == "savefig" else os
        real = getattr(owner, name)
        calls = []

        def failing(*args, **kwargs):
            calls.append(args)
            if len(calls) == 2:
                target = args[1] if name == "savefig" else args[0]
                if hasattr(target, "write"):
                    target.write(b"half a PNG")
                raise OSError(code, os.strerror(code))
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, failing)

    return arrange


def _directory_at_a_png(tmp, monkeypatch):
    _old(tmp, "a.png", "b.png")
    (tmp / OUT / "c.png").mkdir()


def _figures_built(tmp, monkeypatch):
    _old(tmp, *NAMES)


def _figures_built_and_a_file_named_taken(tmp, monkeypatch):
    _old(tmp, *NAMES)
    (tmp / "taken").write_text("a file, where the report's folder should be")
    # With pdflatex, the folder is made first, for pdflatex to run in: that path is the one tested.
    monkeypatch.setattr(_pdflatex, "available", lambda: True)
    monkeypatch.setattr(_pdflatex, "compile_pdf", lambda tex, cwd: pytest.fail("compiled with no folder to run in"))


def _failing_checks(tmp, monkeypatch):
    _old(tmp, *NAMES)

    def run(seed=0):
        raise AgreementError("slope vs symbolic: at (3,) got 1.0, expected 2.0")

    monkeypatch.setattr(verify, "run", run)


def _old_report_and_full_disk(tmp, monkeypatch):
    _old(tmp, *NAMES)
    (tmp / "build" / "report.md").write_text("the old report, whole")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)


def _report_at(name, make):
    """Figures built, and ``make(path)`` at ``name``, where the command is to write an output."""

    def arrange(tmp, monkeypatch):
        _old(tmp, *NAMES)
        make(tmp / name)

    return arrange


def _fifo(path):
    os.mkfifo(path)


def _folder(path):
    path.mkdir()


def _link_to(target):
    """A symlink to ``target``, a path from the current folder; a ``target`` named ...fifo is made a FIFO first."""

    def make(path):
        if target.endswith("fifo"):
            os.mkfifo(target)
        path.symlink_to(Path(target).resolve())

    return make


def _fifo_at_b_png(tmp, monkeypatch):
    _old(tmp, "a.png", "c.png")
    os.mkfifo(tmp / OUT / "b.png")


def _figure_folder(name):
    """Tiny real PNGs in the folder ``name``, and pdflatex on, for the real report to compile."""

    def arrange(tmp, monkeypatch):
        folder = tmp / name
        folder.mkdir()
        for module in figures.FIGURES:
            module.draw().savefig(folder / module.FILENAME, format="png")
        monkeypatch.setattr(_pdflatex, "available", AVAILABLE)

    return arrange


AVAILABLE = _pdflatex.available


def _nothing(tmp, monkeypatch):
    pass


FIGURES_ERROR = "python -m figures: error: "
REPORT = "python -m figures.report"

# module, argv, stdout (None: captured), arrange, exit status, the one stderr line (None: silent), new files.
CASES = {
    # 5. The figure set is written whole or not at all; the old one is kept byte for byte.
    "figures | head -1 writes the whole set": ("figures", [], "closed pipe", _nothing, 0, None, SET),
    "figures into an empty folder": ("figures", [], None, _nothing, 0, None, SET),
    "a directory at a PNG's path": (
        "figures",
        [],
        None,
        _directory_at_a_png,
        2,
        FIGURES_ERROR + r"build/figures/c\.png: Is a directory",
        set(),
    ),
    "disk full at the second PNG": (
        "figures",
        [],
        None,
        _failing_on_second("fsync", errno.ENOSPC),
        2,
        FIGURES_ERROR + r"build/figures/b\.png: No space left on device",
        set(),
    ),
    "the second rename fails": (
        "figures",
        [],
        None,
        _failing_on_second("replace", errno.EIO),
        2,
        FIGURES_ERROR + r"build/figures/b\.png: Input/output error",
        set(),
    ),
    # 6. Clear failures, not tracebacks.
    "a file where build/figures should be": (
        "figures",
        [],
        None,
        _file_at_out,
        2,
        FIGURES_ERROR + "build/figures: Not a directory",
        set(),
    ),
    "an unwritable output folder": (
        "figures",
        [],
        None,
        _refusing(errno.EACCES),
        2,
        FIGURES_ERROR + r"build/figures/a\.png: Permission denied",
        set(),
    ),
    "a read-only output folder": (
        "figures",
        [],
        None,
        _refusing(errno.EROFS),
        2,
        FIGURES_ERROR + r"build/figures/a\.png: Read-only file system",
        set(),
    ),
    "figures.report with no figures built": (
        "figures.report",
        [],
        None,
        _nothing,
        2,
        f"{REPORT}: error: build/figures/a\\.png is missing: run make figures first",
        set(),
    ),
    "figures.report when verification fails": (
        "figures.report",
        [],
        None,
        _failing_checks,
        1,
        f"{REPORT}: verification failed: slope vs symbolic: .*; no report written",
        set(),
    ),
    # 7. The report: written atomically; --help and unknown flags write nothing.
    "figures.report on a full disk keeps the old report": (
        "figures.report",
        [],
        None,
        _old_report_and_full_disk,
        2,
        f"{REPORT}: error: build/report\\.md: No space left on device",
        set(),
    ),
    "figures.report into a folder that is a file": (
        "figures.report",
        ["--out", "taken/report.md"],
        None,
        _figures_built_and_a_file_named_taken,
        2,
        f"{REPORT}: error: taken: Not a directory",
        set(),
    ),
    "figures.report --help": ("figures.report", ["--help"], None, _nothing, 0, None, set()),
    "figures.report --bogus": (
        "figures.report",
        ["--bogus"],
        None,
        _nothing,
        2,
        f"{REPORT}: error: unrecognized arguments: --bogus",
        set(),
    ),
    "numeric.checks.verify --bogus": (
        "numeric.checks.verify",
        ["--bogus"],
        None,
        _nothing,
        2,
        "python -m numeric.checks.verify: error: unrecognized arguments: --bogus",
        set(),
    ),
    # 8. A reader that stopped early ends quietly with 0; a full device is one line and 2.
    "derivations | head -1": ("derivations", ["--layer", "rmsnorm"], "closed pipe", _nothing, 0, None, set()),
    "derivations > /dev/full": (
        "derivations",
        ["--layer", "rmsnorm"],
        "/dev/full",
        _nothing,
        2,
        "python -m derivations: error: No space left on device",
        set(),
    ),
    "derivations check | head -1": ("derivations", ["check", CLAIM], "closed pipe", _nothing, 0, None, set()),
    # A reader gone before the second claim is decided: not "every claim holds" (status 0), but an
    # undecided claim's status.
    "derivations check a b | head -1": (
        "derivations",
        ["check", CLAIM, CLAIM],
        "closed pipe",
        _nothing,
        2,
        None,
        set(),
    ),
    "derivations check > /dev/full": (
        "derivations",
        ["check", CLAIM],
        "/dev/full",
        _nothing,
        2,
        "python -m derivations check: error: No space left on device",
        set(),
    ),
    "figures > /dev/full": ("figures", [], "/dev/full", _nothing, 2, FIGURES_ERROR + "No space left on device", SET),
    "numeric.checks.verify | head -1": ("numeric.checks.verify", [], "closed pipe", _nothing, 0, None, set()),
    "numeric.checks.verify > /dev/full": (
        "numeric.checks.verify",
        [],
        "/dev/full",
        _nothing,
        2,
        "python -m numeric.checks.verify: error: No space left on device",
        set(),
    ),
    "figures.report | head -1": (
        "figures.report",
        [],
        "closed pipe",
        _figures_built,
        0,
        None,
        {"build/report.md", "build/report.tex"},
    ),
    # 9, 10, 15. --out names the sheet: a file, its three outputs distinct, none of them the figures.
    **{
        f"figures.report {' '.join(map(repr, argv))}{' (' + why + ')' if why else ''}": (
            "figures.report",
            argv,
            None,
            arrange,
            2,
            f"{REPORT}: error: {line}",
            set(),
        )
        for argv, why, arrange, line in [
            (["--out", ""], "", _figures_built, "argument --out: must name a file, not be empty"),
            (["--out", "  "], "", _figures_built, "argument --out: must name a file, not be empty"),
            (["--out", "."], "", _figures_built, r"argument --out: must name a file, not a folder: \."),
            (["--out", "sheets/"], "", _figures_built, "argument --out: must name a file, not a folder: sheets/"),
            (["--out", "build"], "a folder", _figures_built, "argument --out: must name a file, not a folder: build"),
            (["--out", "x\0y"], "", _figures_built, "argument --out: must not hold a NUL character"),
            (
                ["--notation", "n=g"],
                "a name the formulas print",
                _figures_built,
                "argument --notation: n=g clashes with g, which .* already prints",
            ),
            (["--figures", "x\0y"], "", _figures_built, "argument --figures: must not hold a NUL character"),
            (
                ["--out", "build/figures/a.png"],
                "",
                _figures_built,
                r"argument --out: must end in \.md, \.tex or \.pdf, or have no suffix; got build/figures/a\.png",
            ),
            (
                ["--out", "report.md"],
                "a symlink to a figure",
                _report_at("report.md", _link_to("build/figures/b.png")),
                r"argument --out: report\.md is build/figures/b\.png, a figure the report embeds",
            ),
            (["--out", "x.md"], "a FIFO", _report_at("x.md", _fifo), r"x\.md: Not a regular file"),
            # As /dev/full: the three files would be made beside it.
            (
                ["--out", "x"],
                "x a FIFO",
                _report_at("x", _fifo),
                r"argument --out: must name a regular file or a new one; x is a device, FIFO or socket",
            ),
            (["--out", "x.pdf"], "x.tex a FIFO", _report_at("x.tex", _fifo), r"x\.tex: Not a regular file"),
            (["--out", "x"], "x.md a folder", _report_at("x.md", _folder), r"x\.md: Is a directory"),
            (
                ["--out", "x.md"],
                "a symlink to a FIFO",
                _report_at("x.md", _link_to("fifo")),
                r"x\.md: Not a regular file",
            ),
            (
                ["--out", "x"],
                "x.md a symlink to x.tex",
                _report_at("x.md", _link_to("x.tex")),
                r"argument --out: x\.md and x\.tex are the same file",
            ),
            (
                ["--out", "x.md"],
                "x.tex a symlink to a folder",
                _report_at("x.tex", _link_to("build")),
                r"x\.tex: Is a directory",
            ),
            (
                ["--figures", 'say "cheese"', "--out", "x.md"],
                "a quote in the figures' folder",
                _figure_folder('say "cheese"'),
                r"""argument --figures: pdflatex cannot include 'say "cheese"/a\.png': it holds '"'""",
            ),
        ]
    },
    "figures into a folder where a PNG is a FIFO": (
        "figures",
        [],
        None,
        _fifo_at_b_png,
        2,
        FIGURES_ERROR + r"build/figures/b\.png: Not a regular file",
        set(),
    ),
}


def _stdout(kind):
    if kind == "closed pipe":
        read, write = os.pipe()
        os.close(read)
        return open(write, "w")
    return open(kind, "w")


# A whole verification (2 s) to reach the path every command's closed pipe takes (cli.finish):
# make test-slow runs it; numeric.checks.verify > /dev/full, in the fast tier, runs it once.
SLOW_CASES = {"numeric.checks.verify | head -1"}


@pytest.mark.parametrize("case", [slow(case) if case in SLOW_CASES else case for case in CASES])
@pytest.mark.usefixtures("fast")
def test_a_command_ends_in_its_status_and_at_most_one_line(case, tmp_path, monkeypatch, capsys):
    module, argv, stdout, arrange, status, line, new = CASES[case]
    if stdout == "/dev/full" and not Path(stdout).exists():
        pytest.skip("no /dev/full here")
    monkeypatch.chdir(tmp_path)
    arrange(tmp_path, monkeypatch)
    before = _tree(tmp_path)
    if stdout is None:
        assert _python_m(module, argv, monkeypatch) == status
    else:
        with _stdout(stdout) as file, monkeypatch.context() as patch:
            patch.setattr(sys, "stdout", file)
            assert _python_m(module, argv, monkeypatch) == status
    out, err = capsys.readouterr()
    assert out.startswith("usage: ") == ("--help" in argv)
    if line is None:
        assert err == ""
    else:
        assert len(err.splitlines()) == 1, err
        assert re.fullmatch(line, err.strip()), err
    after = _tree(tmp_path)
    assert set(after) - set(before) == new, "no temporary left, and nothing written that should not be"
    assert {name: after.get(name) for name in before} == before, "the old files are kept byte for byte"


@pytest.fixture
def short(monkeypatch):
    """A sheet of the figures and checks alone: where it goes is tested, not what it holds."""
    for module in (catalog, report):  # python -m figures.report imports it afresh from the catalog
        monkeypatch.setattr(module, "rows", lambda keys, notation: [])


def _compiled(tex, cwd):
    return _pdflatex.Compiled(b"%PDF from " + tex.encode()[:20], "")


# --out -> the sheet's three files: Markdown, LaTeX, PDF (compiled by a stand-in here).
SHEETS = {
    "report": ("report.md", "report.tex", "report.pdf"),
    "report.md": ("report.md", "report.tex", "report.pdf"),
    "report.tex": ("report.md", "report.tex", "report.pdf"),
    "report.pdf": ("report.md", "report.tex", "report.pdf"),
    "sub/x.y.md": ("sub/x.y.md", "sub/x.y.tex", "sub/x.y.pdf"),
    ".hidden": (".hidden.md", ".hidden.tex", ".hidden.pdf"),
}


@pytest.mark.parametrize("out", SHEETS)
@pytest.mark.usefixtures("fast", "short")
def test_the_sheet_goes_to_three_files_named_after_out(out, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _old(tmp_path, *NAMES)
    monkeypatch.setattr(_pdflatex, "available", lambda: True)
    monkeypatch.setattr(_pdflatex, "compile_pdf", _compiled)
    assert _python_m(REPORT.removeprefix("python -m "), ["--out", out], monkeypatch) == 0
    markdown, tex, pdf = SHEETS[out]
    assert capsys.readouterr() == (f"wrote {markdown}, {tex}, {pdf}\n", "")
    written = _tree(tmp_path)
    assert set(written) == {*SET, markdown, tex, pdf}
    assert written[markdown].startswith(b"# Derivation sheet")
    assert written[tex].startswith(b"\\documentclass")
    assert written[pdf].startswith(b"%PDF from \\documentclass")


@pytest.mark.usefixtures("fast", "short")
def test_a_symlinked_output_stays_a_symlink_and_its_target_is_replaced(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _old(tmp_path, *NAMES)
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "sheet.md").write_text("old sheet")
    Path("report.md").symlink_to(Path("kept/sheet.md"))
    Path("report.tex").symlink_to(Path("kept/new.tex"))  # dangling: its target is created
    assert report.main(["--out", "report.md"]) == 0
    assert capsys.readouterr() == ("wrote report.md, report.tex\n", "")
    assert Path("report.md").is_symlink()
    assert Path("report.tex").is_symlink()
    assert Path("kept/sheet.md").read_text().startswith("# Derivation sheet")
    assert Path("kept/new.tex").read_text().startswith("\\documentclass")
    assert sorted(p.name for p in Path("kept").iterdir()) == ["new.tex", "sheet.md"], "no temporary left"


@pytest.mark.skipif(not _pdflatex.available(), reason="no pdflatex")
@pytest.mark.parametrize("folder", ["100% figures", "#1 figures", "two  spaces", "a&b~c$d^e_f", "é ü"])
@pytest.mark.usefixtures("fast", "short")
def test_pdflatex_includes_figures_from_a_folder_of_any_printable_name(folder, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _figure_folder(folder)(tmp_path, monkeypatch)
    assert report.main(["--figures", folder, "--out", "out/sheet.md"]) == 0, capsys.readouterr().err
    pdf = (tmp_path / "out" / "sheet.pdf").read_bytes()
    assert pdf.count(b"/Subtype /Image") >= len(NAMES)


@pytest.mark.parametrize("folder", ["100% figures", "#1 figures", "two  spaces", "a&b~c$d^e_f", "(x) [y]"])
@pytest.mark.usefixtures("fast", "short")
def test_the_markdown_links_reach_the_figures_from_a_folder_of_any_printable_name(folder, tmp_path, monkeypatch):
    """A Markdown reader takes a link up to a space or ')' and reads '#' as a fragment: each link
    is the figure's path, percent-encoded, and decodes back to it."""
    import re
    import urllib.parse

    monkeypatch.chdir(tmp_path)
    _figure_folder(folder)(tmp_path, monkeypatch)
    assert report.main(["--figures", folder, "--out", "out/sheet.md"]) == 0
    links = re.findall(r"^!\[[^\]]*\]\(([^()\s#]+)\)$", (tmp_path / "out" / "sheet.md").read_text(), flags=re.M)
    assert len(links) == len(NAMES)
    for link in links:
        assert (tmp_path / "out" / urllib.parse.unquote(link)).is_file(), link


@pytest.mark.usefixtures("fast")
def test_pngs_get_the_permissions_the_umask_gives(tmp_path):
    mask = os.umask(0o002)
    try:
        assert figures_command.main(["--out", str(tmp_path)]) == 0
    finally:
        os.umask(mask)
    for name in NAMES:
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o664


# A write stopped halfway: ``figures._output`` alone (it imports nothing of the project), a
# writer that writes a little, says so, and waits.
STOPPED = """
import importlib.util, sys, time
from pathlib import Path

spec = importlib.util.spec_from_file_location("output", sys.argv[1])
output = importlib.util.module_from_spec(spec)
spec.loader.exec_module(output)

def slow(file):
    file.write(b"half a PNG")
    print("writing", flush=True)
    time.sleep(60)

output.write_all({Path(sys.argv[2]) / "a.png": slow})
"""


@pytest.mark.usefixtures("fast")
def test_no_temporary_survives_sigterm_nor_the_start_after_sigkill(tmp_path):
    folders = {sig: tmp_path / sig.name for sig in (signal.SIGTERM, signal.SIGKILL)}
    stopped = {}
    for sig, folder in folders.items():
        folder.mkdir()
        (folder / "a.png").write_bytes(b"old")
        command = [sys.executable, "-c", STOPPED, figures._output.__file__, str(folder)]
        stopped[sig] = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    for sig, process in stopped.items():
        assert process.stdout is not None
        assert process.stdout.readline() == "writing\n"
        process.send_signal(sig)
        process.wait(timeout=30)
        process.stdout.close()
    assert stopped[signal.SIGTERM].returncode == 128 + signal.SIGTERM
    assert _tree(folders[signal.SIGTERM]) == {"a.png": b"old"}
    # SIGKILL leaves its temporary; the next start removes it (a live process's own it leaves alone).
    killed = folders[signal.SIGKILL]
    assert len(_tree(killed)) == 2
    live = killed / f".partial-{os.getpid()}-0-b.png"
    live.write_bytes(b"")
    assert figures_command.main(["--out", str(killed)]) == 0
    assert sorted(_tree(killed)) == [live.name, *NAMES]


def test_a_real_process_ends_without_a_traceback():
    """The interpreter's own flush at exit finds nothing left to fail on; stdout buffered, as by default."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    command = [sys.executable, "-m", "derivations", "--layer", "rmsnorm"]
    expected = {"closed pipe": (0, ""), "/dev/full": (2, "python -m derivations: error: No space left on device\n")}
    running = {}
    for stdout in expected:  # at once: each spends its time starting up
        with _stdout(stdout) as file:
            running[stdout] = subprocess.Popen(
                command, stdout=file, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=environment
            )
    for stdout, process in running.items():
        _, err = process.communicate(timeout=60)
        assert (process.returncode, err) == expected[stdout]


def test_help_to_a_full_device_is_one_line_even_unbuffered():
    """argparse swallows a failed write of --help; with stdout unbuffered nothing was left to fail at exit."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "derivations", "--help"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=environment,
            timeout=60,
        )
    assert (result.returncode, result.stderr) == (2, "python -m derivations: error: No space left on device\n")


def _closing(*fds):
    """A child's setup that closes ``fds`` before it runs, as ``>&-`` and ``2>&-`` do in a shell."""

    def close():
        for fd in fds:
            os.close(fd)

    return close


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["--layer", "rmsnorm"], 0),
        (["check", "slope_at_zero == 1/epsilon"], 1),  # refuted
        (["check", "slope_at_zero == foo("], 2),  # an error verdict
    ],
)
def test_a_closed_stream_keeps_the_status_or_is_one_line(argv, status):
    """With stderr closed the status is the command's own; with stdout closed nothing can be
    written: one line on stderr, status 2, no traceback."""
    command = [sys.executable, "-m", "derivations", *argv]
    quiet = subprocess.run(command, stdout=subprocess.DEVNULL, preexec_fn=_closing(2), cwd=ROOT, check=False)
    assert quiet.returncode == status
    mute = subprocess.run(command, stderr=subprocess.PIPE, preexec_fn=_closing(1), text=True, cwd=ROOT, check=False)
    prog = "python -m derivations check" if argv[0] == "check" else "python -m derivations"
    assert (mute.returncode, mute.stderr) == (2, f"{prog}: error: standard output is closed\n")


def test_every_file_is_on_disk_before_any_takes_its_name(tmp_path, monkeypatch):
    """The docstring's "synced": each temporary's bytes are flushed to the disk (fsync) before
    the first rename, so that a crash after a rename leaves the new file whole, not empty."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor):
        events.append(("fsync", os.path.basename(os.readlink(f"/proc/self/fd/{descriptor}"))))
        real_fsync(descriptor)

    def replace(source, target):
        events.append(("replace", os.path.basename(source)))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    targets = [tmp_path / "a.txt", tmp_path / "b.txt"]
    figures._output.write_all({target: lambda file, t=target: file.write(t.name.encode()) for target in targets})
    assert [target.read_text() for target in targets] == ["a.txt", "b.txt"]
    synced = [name for kind, name in events if kind == "fsync"]
    renamed = [name for kind, name in events if kind == "replace"]
    assert sorted(synced) == sorted(renamed), events  # every file placed was synced first
    first = next(i for i, (kind, _) in enumerate(events) if kind == "replace")
    assert all(kind == "fsync" for kind, _ in events[:first]), events
    assert len(synced) == len(targets), events


@pytest.mark.parametrize("handler", ["python", "ignored", "default"])
def test_writing_keeps_whatever_sigterm_handler_was_installed(tmp_path, handler):
    """While files are written SIGTERM raises SystemExit (so the clean-up runs), then the handler
    that was there is back: a Python function of the caller's, SIG_DFL, or SIG_IGN left alone."""
    import signal

    import figures._output

    def own(signum, frame):
        pass

    installed = {"python": own, "ignored": signal.SIG_IGN, "default": signal.SIG_DFL}[handler]
    previous = signal.signal(signal.SIGTERM, installed)
    try:
        seen = []
        target = tmp_path / "a.txt"
        figures._output.write_all(
            {target: lambda file: seen.append(signal.getsignal(signal.SIGTERM)) or file.write(b"a")}
        )
        assert target.read_bytes() == b"a"
        assert seen == [signal.SIG_IGN if handler == "ignored" else figures._output._exit]
        assert signal.getsignal(signal.SIGTERM) == installed
    finally:
        signal.signal(signal.SIGTERM, previous)
