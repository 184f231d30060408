"""`python -m derivations`: the golden LaTeX, the three formats, and clean errors."""

import contextlib
import json
import sys
from pathlib import Path

import pytest

from derivations import LAYERS, formulas
from derivations.__main__ import main
from derivations.catalog import rows
from derivations.render import FORMATS, text

GOLDEN = Path(__file__).parent / "golden"


def _blocks(text: str) -> dict[str, str]:
    """The golden text's blocks by their first line, the formula's qualified name."""
    return {block.split("\n", 1)[0]: block for block in text.strip("\n").split("\n\n")}


GOLDEN_BLOCKS = _blocks((GOLDEN / "derive.txt").read_text())


@pytest.fixture(scope="module")
def produced() -> dict[str, str]:
    return _blocks(text(rows(list(LAYERS))))


# A deliberate change to a formula is recorded with `make golden` and reviewed
# as a diff of tests/golden/derive.txt; a drift names the formula that moved.
@pytest.mark.parametrize("name", list(GOLDEN_BLOCKS))
def test_formula_matches_the_committed_golden_block(name, produced):
    assert name in produced, f"{name} is in tests/golden/derive.txt but no longer derived"
    assert produced[name] == GOLDEN_BLOCKS[name], f"{name} drifted from tests/golden/derive.txt"


def test_every_formula_has_a_golden_block_in_order(produced):
    assert list(produced) == list(GOLDEN_BLOCKS), "formulas added, removed or reordered: run make golden"


def test_the_whole_text_output_is_the_golden_file(capsys):
    assert main([]) == 0
    assert capsys.readouterr().out == (GOLDEN / "derive.txt").read_text()


@pytest.mark.parametrize("key", list(LAYERS))
def test_one_layer_is_its_part_of_the_whole(key, capsys):
    assert main(["--layer", key]) == 0
    part = capsys.readouterr().out
    assert part.startswith(f"{key}.definition\n")
    assert part in (GOLDEN / "derive.txt").read_text()


def test_json_has_name_statement_latex_for_every_formula(capsys):
    assert main(["--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    every = [f for key in LAYERS for f in formulas(key)]
    assert [r["name"] for r in rows] == [f.qualified for f in every]
    for row, f in zip(rows, every, strict=True):
        assert {"name", "statement", "latex"} <= row.keys()
        assert row["latex"] == f.latex()
        assert row["statement"] == f.statement


def test_markdown_uses_math_blocks(capsys):
    assert main(["--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.count("```math\n") == sum(len(formulas(key)) for key in LAYERS)
    assert r"J c = \frac{\varepsilon}{s^{3}} c" in out


def test_every_format_is_registered():
    assert sorted(FORMATS) == ["conventions", "json", "latex", "markdown", "text"]


@pytest.mark.parametrize("argv", [["--format", "yaml"], ["--layer", "nope"], ["--bogus"]])
def test_bad_arguments_print_one_line_and_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_readme_blocks_are_generated_from_the_derivations():
    """The README's formula and the documentation's generated blocks (the conventions table on
    docs/conventions.md, the derive sample and the LaTeX excerpt on docs/getting-started.md, the
    numeric functions on docs/numeric.md) are what the derivations give now."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme", GOLDEN / "readme.py")
    assert spec is not None
    assert spec.loader is not None
    readme = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(readme)
    contents = readme.generated()
    for name, page in readme.PAGES.items():
        assert readme.block(name).search(page.read_text()), f"{page.name} has no {name} block"
    for page in sorted(set(readme.PAGES.values())):
        text = page.read_text()
        assert readme.update(text, contents) == text, f"{page.name}: generated blocks are stale: run make golden"


def test_claims_are_read_from_a_pipe():
    """``--claims /dev/stdin``: a file that is not a regular one, read whole (a real process: its stdin)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "derivations", "check", "--claims", "/dev/stdin"],
        input='[[claim]]\nid = "a"\nclaim = "slope_at_zero == 1/sqrt(epsilon)"\n'
        '[[claim]]\nid = "b"\nclaim = "slope_at_zero == 1/epsilon"\n',
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert [line.split()[:2] for line in done.stdout.splitlines() if line.startswith("[")] == [
        ["[a]", "proved:"],
        ["[b]", "refuted:"],
    ]
    assert done.returncode == 1, done.stderr


def _command(*argv, stdin=None, env=None, timeout=600, **options):
    """``python -m derivations ARGV`` as a real process: its status, stdout and stderr."""
    import os
    import subprocess
    import sys

    given = {"input": stdin} if isinstance(stdin, (str, bytes, type(None))) else {"stdin": stdin}
    return subprocess.run(
        [sys.executable, "-m", "derivations", *argv],
        **given,
        capture_output=True,
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, **(env or {})},
        timeout=timeout,
        **options,
    )


@pytest.mark.parametrize(
    ("layer", "option", "clash"),
    [
        ("layernorm_std_eps", "n=g", "g, which layernorm_std_eps.vjp already prints"),
        ("layernorm", "n=T", "T, which layernorm.jacobian already prints"),
        ("layernorm", "n=k", "k, which layernorm.vjp already prints"),
        ("layernorm", "n=v", "v, which layernorm.jvp already prints"),
        ("layernorm", "n=y", "y, which layernorm.definition already prints"),
        ("layernorm", "n=H", "H, which layernorm.hvp already prints"),
        ("layernorm", "n=d", "d, which layernorm.slope already prints"),
        ("layernorm", "q=y_{i}", "y, which layernorm.definition already prints"),
        ("dyt", "alpha=e", "the constant e, which already prints as e"),
        ("layernorm", r"n=\pi", r"the constant \pi, which already prints as \pi"),
    ],
)
def test_a_new_name_the_printed_formulas_already_use_is_refused_in_one_line(layer, option, clash, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--layer", layer, "--notation", option])
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert out == ""
    assert err == f"python -m derivations: error: notation: {option} clashes with {clash}\n"


def test_a_renamed_symbol_may_take_a_name_no_printed_formula_uses(capsys):
    assert main(["--layer", "layernorm", "--notation", "n=N", "--notation", "q=n"]) == 0
    out = capsys.readouterr().out
    assert r"\frac{1}{N s} \mathbf{1}" in out
    assert r"\sqrt{n + \varepsilon}" in out


@pytest.mark.parametrize("name", ["pi", "E", "e", "I", "i", "oo"])
def test_a_symbol_never_prints_as_the_constant_of_its_name(name):
    import sympy as sp

    from derivations._printer import ReaderPrinter
    from derivations.notation import DEFAULT

    printer = ReaderPrinter(DEFAULT)
    shown = printer.doprint(sp.Symbol(name, nonnegative=True))
    constants = {printer.doprint(c) for c in (sp.pi, sp.E, sp.I, sp.oo, sp.EulerGamma, sp.Catalan, sp.GoldenRatio)}
    assert shown not in constants


def test_a_statistic_named_pi_does_not_print_as_the_constant(tmp_path):
    path = tmp_path / "pi.toml"
    path.write_text('key = "mine"\ntitle = "t"\noutput = "x[i] / sqrt(pi + epsilon)"\n')
    path.write_text(path.read_text() + '[statistics]\npi = "mean(x[j]**2)"\n')
    done = _command("--definition", str(path), "--no-cache", text=True)
    assert done.returncode == 0, done.stderr
    assert r"\pi" not in done.stdout
    assert r"\sqrt{\mathit{pi} + \varepsilon}" in done.stdout


_CLAIM = '[[claim]]\nid = "a"\nclaim = "slope_at_zero == 1/sqrt(epsilon)"\n'


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("/dev/zero", "claims file /dev/zero: not a regular file"),
        ("fifo", "claims file {tmp}/fifo: not a regular file"),
        ("folder", "claims file {tmp}/folder: not a regular file"),
        ("missing", "claims file {tmp}/missing: No such file or directory"),
        ("large", "claims file {tmp}/large: larger than 16777216 bytes"),
    ],
)
def test_a_claims_file_that_is_not_a_small_regular_file_is_one_line(source, line, tmp_path):
    import os

    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")  # nobody writes it: reading it would wait forever
    with open(tmp_path / "large", "wb") as large:
        large.truncate((16 << 20) + 1)
    path = source if source.startswith("/") else str(tmp_path / source)
    done = _command("check", "--claims", path, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"python -m derivations check: error: {line.format(tmp=tmp_path)}\n"


@pytest.mark.parametrize("name", ["-", "/dev/stdin"])
def test_claims_from_standard_input_are_read_up_to_the_cap(name):
    done = _command("check", "--claims", name, stdin=_CLAIM, text=True)
    assert done.stdout.startswith("[a] proved:"), done.stderr
    assert done.returncode == 0
    with open("/dev/zero", "rb") as zeros:
        done = _command("check", "--claims", name, stdin=zeros, timeout=120)
    assert done.returncode == 2
    line = f"python -m derivations check: error: claims file {name}: larger than 16777216 bytes\n"
    assert done.stderr == line.encode()


@pytest.mark.parametrize(
    "env",
    [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}],
    ids=["ascii", "C-locale"],
)
def test_conventions_print_in_ascii_spellings_where_stdout_takes_only_ascii(env):
    done = _command("--format", "conventions", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    out = done.stdout.decode("ascii")
    assert "slope at 0 on (-t, 0, t)" in out
    assert "bound on ||J||_2" in out
    assert "output at a constant input t*1" in out


def test_a_memory_error_without_a_message_is_one_line_that_says_so(monkeypatch, capsys):
    from derivations import __main__ as command
    from derivations.cli import run

    def exhausted(argv):
        raise MemoryError

    monkeypatch.setattr(command, "_derive", exhausted)
    assert run(command.main, "python -m derivations", []) == 1
    assert capsys.readouterr().err == "python -m derivations: error: out of memory\n"


def test_a_memory_error_while_deriving_is_one_line_that_says_so(monkeypatch, capsys):
    import derivations.catalog
    from derivations import cache as derivation_cache

    def exhausted(keys, notation=None):
        raise MemoryError

    monkeypatch.setattr(derivation_cache, "read", lambda *args: None)
    monkeypatch.setattr(derivations.catalog, "rows", exhausted)
    assert main(["--layer", "rmsnorm"]) == 1
    assert capsys.readouterr().err == "python -m derivations: error: out of memory\n"


# --- issue 32: the command line's habits --------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
L4NORM = ROOT / "examples" / "l4norm.toml"


class _Terminal:
    """A stderr that says it is a terminal, and keeps what is written to it."""

    encoding = "utf-8"

    def __init__(self):
        self.parts = []

    def write(self, text):
        self.parts.append(text)
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return True

    def text(self):
        return "".join(self.parts)


def _usage_error(argv, capsys):
    """``main(argv)`` as a usage error: its one line on stderr (status 2, nothing on stdout)."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2, err
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


def test_help_lists_every_command_with_one_line(capsys):
    from derivations.__main__ import COMMANDS

    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    listed = {line.split()[0]: line for line in out.splitlines() if line.startswith("    ") and line.split()}
    assert set(COMMANDS) <= set(listed), listed
    for name, help_line in COMMANDS.items():
        assert help_line.split()[0] in listed[name]
    assert {"check", "codegen", "review", "identify", "derive"} <= set(COMMANDS)
    assert "--version" in out


@pytest.mark.parametrize("command", ["check", "codegen", "review", "identify"])
def test_each_command_has_its_own_help(command, capsys):
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m derivations {command} ")


def test_version_is_the_package_metadata(capsys):
    import importlib.metadata

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"epsilon-layernorm {importlib.metadata.version('epsilon-layernorm')}\n"


def test_version_falls_back_to_pyproject_where_not_installed(monkeypatch):
    import importlib.metadata
    import tomllib

    from derivations.__main__ import version

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert version() == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_derive_is_the_default_command(capsys):
    assert main(["--layer", "rmsnorm", "--format", "json"]) == 0
    default = capsys.readouterr().out
    assert main(["derive", "--layer", "rmsnorm", "--format", "json"]) == 0
    assert capsys.readouterr().out == default


def test_the_console_script_runs_main_under_its_own_name():
    """`entry` (pyproject's [project.scripts]) exits with main's status; its messages carry its name."""
    script = "import sys; sys.argv[0] = 'epsilon-layernorm'; from derivations.__main__ import entry; entry()"
    import subprocess
    import sys

    def run(*argv):
        return subprocess.run(
            [sys.executable, "-c", script, *argv], capture_output=True, text=True, cwd=ROOT, timeout=300
        )

    done = run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("epsilon-layernorm ")
    done = run("chekc")
    assert done.returncode == 2
    assert done.stderr.startswith("epsilon-layernorm: error: argument COMMAND: invalid choice: 'chekc'")
    done = run("check", "--layer", "rmsnorm", "slope_at_zero == 1/sqrt(epsilon)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[inline] proved:")


def test_check_takes_several_claims_each_with_its_verdict(capsys):
    claims = ["slope_at_zero == 1/sqrt(epsilon)", "slope_at_zero == 1/epsilon"]
    # Options between the claims too: each claim is checked, about the layer given.
    assert main(["check", claims[0], "--layer", "rmsnorm", claims[1], "--no-cache"]) == 1
    heads = [line.split(":")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert heads == ["[inline-1] proved", "[inline-2] refuted"]


def test_check_dash_reads_claims_from_standard_input_one_a_line():
    text = "# RMSNorm\n\nslope_at_zero == 1/sqrt(epsilon)\n   \n  slope_at_zero == 1/epsilon  \n"
    done = _command("check", "-", "--layer", "rmsnorm", stdin=text, text=True)
    heads = [line.split("  [")[0] for line in done.stdout.splitlines() if line.startswith("[")]
    assert heads == [
        "[stdin-3] proved: slope_at_zero == 1/sqrt(epsilon)",
        "[stdin-5] refuted: slope_at_zero == 1/epsilon",
    ], done.stderr
    assert done.returncode == 1


@pytest.mark.parametrize(
    ("stdin", "line"),
    [
        ("zeros", "argument claim: standard input is larger than 1048576 bytes"),
        ("# only a comment\n\n", "argument claim: standard input holds no claim"),
        (b"\xff\n", "argument claim: standard input is not UTF-8 text (byte 0)"),
    ],
)
def test_claims_from_standard_input_that_cannot_be_read_are_one_line(stdin, line):
    if stdin == "zeros":
        with open("/dev/zero", "rb") as zeros:
            done = _command("check", "-", stdin=zeros, timeout=120)
    else:
        done = _command("check", "-", stdin=stdin.encode() if isinstance(stdin, str) else stdin)
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.decode().startswith(f"python -m derivations check: error: {line}")
    assert done.stderr.count(b"\n") == 1


def test_a_definition_is_read_from_standard_input():
    selected = ["--formula", "*.slope_at_zero", "--no-cache"]
    from_file = _command("--definition", str(L4NORM), *selected, text=True)
    from_stdin = _command("--definition", "-", *selected, stdin=L4NORM.read_text(), text=True)
    assert from_file.returncode == from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout
    assert from_stdin.stdout.startswith("l4norm.slope_at_zero\n")
    checked = _command(
        "check", "--definition", "-", "slope_at_zero == epsilon**(-1/4)", stdin=L4NORM.read_text(), text=True
    )
    assert checked.stdout.startswith("[inline] proved: slope_at_zero == epsilon**(-1/4)  [l4norm]"), checked.stderr
    assert checked.returncode == 0


@pytest.mark.parametrize(
    ("argv", "stdin", "line"),
    [
        (
            ["--definition", "-"],
            "zeros",
            "python -m derivations: error: argument --definition: standard input is larger than 65536 bytes",
        ),
        (
            ["--definition", "-"],
            "output = \n",
            "python -m derivations: error: standard input: the file is not valid TOML",
        ),
        (
            ["identify", "--definition", "-"],
            "zeros",
            "python -m derivations identify: error: argument --definition: standard input is larger than 100000 bytes",
        ),
        (
            ["check", "-", "--definition", "-"],
            "",
            "python -m derivations check: error: standard input is read once: "
            "give - to one of a claim and --definition",
        ),
    ],
)
def test_standard_input_that_cannot_be_a_definition_is_one_line(argv, stdin, line):
    if stdin == "zeros":
        with open("/dev/zero", "rb") as zeros:
            done = _command(*argv, stdin=zeros, timeout=120)
    else:
        done = _command(*argv, stdin=stdin.encode())
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.decode().startswith(line), done.stderr
    assert done.stderr.count(b"\n") == 1


def _selected(pattern):
    """The formulas ``pattern`` names, by the rule --formula documents."""
    from fnmatch import fnmatchcase

    every = [f.qualified for key in LAYERS for f in formulas(key)]
    return [
        name
        for name in every
        if fnmatchcase(name, pattern) or ("." not in pattern and fnmatchcase(name.partition(".")[2], pattern))
    ]


def _names_printed(form, out):
    import re

    if form == "text":
        return [block.split("\n", 1)[0] for block in out.strip("\n").split("\n\n")]
    if form == "json":
        return [row["name"] for row in json.loads(out)]
    if form == "markdown":
        return re.findall(r"^### `([^`]+)`$", out, flags=re.M)
    if form == "latex":
        return re.findall(r"\\label\{eq:([^}]+)\}", out)
    raise AssertionError(form)


@pytest.mark.parametrize("form", ["text", "json", "markdown", "latex"])
@pytest.mark.parametrize("pattern", ["layernorm.jac*", "*.slope_at_zero", "rmsnorm.spectral_bound", "eigen_x"])
def test_formula_selects_by_name_or_glob_in_every_format(form, pattern, capsys):
    assert main(["--formula", pattern, "--format", form]) == 0
    printed = _names_printed(form, capsys.readouterr().out)
    assert printed == _selected(pattern)
    assert 0 < len(printed) < sum(len(formulas(key)) for key in LAYERS)


def test_several_formula_options_select_the_union_in_catalog_order(capsys):
    assert main(["--formula", "rmsnorm.jacobian", "--formula", "layernorm.definition", "--format", "json"]) == 0
    assert _names_printed("json", capsys.readouterr().out) == ["layernorm.definition", "rmsnorm.jacobian"]


def test_formula_selects_the_columns_of_the_conventions_table(capsys):
    assert main(["--formula", "*.spectral_bound", "--format", "conventions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| library and function | layer | bound on ‖J‖₂ |"
    assert lines[1] == "|---|---|---|"
    assert any("`rmsnorm` | $\\frac{1}{\\sqrt{\\varepsilon}}$ |" in line for line in lines)
    assert main(["--format", "conventions"]) == 0
    assert "slope at 0" in capsys.readouterr().out  # without --formula, every column
    # One layer's row alone (a table of three lines) loses the empty columns too.
    assert main(["--layer", "rmsnorm", "--formula", "rmsnorm.spectral_bound", "--format", "conventions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["| library and function | layer | bound on ‖J‖₂ |", "|---|---|---|"]
    assert len(lines) == 3
    assert lines[2].endswith("| `rmsnorm` | $\\frac{1}{\\sqrt{\\varepsilon}}$ |")


def test_a_formula_selection_is_a_whole_output_cached_by_its_arguments():
    from derivations.__main__ import _output_entry

    assert _output_entry(["--formula", "layernorm.jac*", "--format", "json"]) is not None


@pytest.mark.parametrize(
    ("pattern", "line"),
    [
        ("rmsnorm.jacobain", "'rmsnorm.jacobain' matches no formula; did you mean 'rmsnorm.jacobian'?"),
        ("rmsnrom.jacobian", "did you mean 'rmsnorm.jacobian'?"),
        ("spectral_bond", "'spectral_bond' matches no formula; did you mean 'spectral_bound'?"),
        ("layernorm.nothing*", "'layernorm.nothing*' matches no formula"),
    ],
)
def test_an_unknown_formula_is_one_line_with_the_nearest_name(pattern, line, capsys):
    err = _usage_error(["--formula", pattern], capsys)
    assert err.startswith("python -m derivations: error: argument --formula: ")
    assert line in err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--layer", "rmsnrom"],
            "python -m derivations: error: argument --layer: invalid choice: 'rmsnrom'; did you mean 'rmsnorm'?",
        ),
        (
            ["chekc", "x"],
            "python -m derivations: error: argument COMMAND: invalid choice: 'chekc'; did you mean 'check'?",
        ),
        (
            ["check", "--layer", "layernrom", "x"],
            "python -m derivations check: error: argument --layer: invalid "
            "choice: 'layernrom'; did you mean 'layernorm'?",
        ),
        (["codegen", "--layer", "dty", "--target", "c"], "did you mean 'dyt'?"),
        (
            ["codegen", "--layer", "dyt", "--target", "numpi"],
            "argument --target: invalid choice: 'numpi'; did you mean 'numpy'?",
        ),
        (
            ["--format", "jsno"],
            "argument --format: invalid choice: 'jsno'; did you mean 'json'? "
            "(choose from 'conventions', 'json', 'latex', 'markdown', 'text')",
        ),
        (
            ["check", "--format", "jsno", "x"],
            "argument --format: invalid choice: 'jsno'; did you mean 'json'? (choose from 'json', 'markdown', 'text')",
        ),
    ],
)
def test_an_unknown_layer_command_or_choice_says_what_was_meant(argv, line, capsys):
    assert line in _usage_error(argv, capsys)


def test_a_claims_file_entry_about_an_unknown_layer_says_which_was_meant(tmp_path, capsys):
    path = tmp_path / "claims.toml"
    path.write_text('[[claim]]\nid = "a"\nclaim = "slope_at_zero > 0"\nlayer = "rmsnrom"\n')
    assert main(["check", "--claims", str(path)]) == 2
    out = capsys.readouterr().out
    assert out.startswith("[a] error: slope_at_zero > 0  [rmsnrom]")
    assert "layer 'rmsnrom' is not a layer of the catalog; did you mean 'rmsnorm'?" in out


@pytest.mark.parametrize(
    ("claim", "status"),
    [("lipschitz == 1/sqrt(epsilon)", 0), ("lipschitz <= 1/sqrt(epsilon)", 0), ("lipschitz <= 1/epsilon", 1)],
)
def test_rmsnorm_is_one_over_root_epsilon_lipschitz(claim, status, capsys):
    assert main(["check", "--layer", "rmsnorm", claim, "--no-cache"]) == status
    verdict = "proved" if status == 0 else "refuted"
    assert capsys.readouterr().out.startswith(f"[inline] {verdict}: {claim}  [rmsnorm]")


def test_a_progress_bar_starts_no_monitor_thread(monkeypatch):
    """The commands fork workers while a bar is shown: tqdm's monitor thread stays off, and a bar
    on a terminal leaves the process with the threads it had."""
    import threading

    from tqdm import tqdm

    from derivations.cli import progress

    monkeypatch.setattr(sys, "stderr", _Terminal())
    monkeypatch.setattr(tqdm, "monitor", None)  # none left by an earlier bar in this process
    before = set(threading.enumerate())
    bar = progress(3, "claim", "checking")
    try:
        bar.update(1)
        assert set(threading.enumerate()) == before
        assert bar.monitor is None
    finally:
        bar.close()


def test_a_cold_derivation_shows_a_progress_bar_ticking_once_per_layer_on_a_terminal(monkeypatch, capsys):
    from derivations import __main__ as command

    argv = ["--formula", "rmsnorm*.slope_at_zero", "--format", "json"]
    assert main(argv) == 0
    quiet, err = capsys.readouterr()
    assert err == ""  # stderr is not a terminal: no bar
    terminal = _Terminal()
    monkeypatch.setattr(command, "_output_entry", lambda *args: None)  # not the stored output: derive
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(argv) == 0
    assert capsys.readouterr().out == quiet  # the same output
    shown = terminal.text()
    assert "deriving" in shown
    assert "4/4" in shown  # rmsnorm, rmsnorm_affine, rmsnorm_eps_outside, rmsnorm_gemma
    assert "layer" in shown


def test_a_claims_file_shows_a_progress_bar_ticking_once_per_claim_on_a_terminal(monkeypatch, capsys, tmp_path):
    path = tmp_path / "claims.toml"
    path.write_text(
        '[[claim]]\nid = "a"\nclaim = "slope_at_zero > 0"\n[[claim]]\nid = "b"\nclaim = "slope_at_zero < 0"\n'
    )
    assert main(["check", "--claims", str(path)]) == 1
    quiet, err = capsys.readouterr()
    assert err == ""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["check", "--claims", str(path)]) == 1
    assert capsys.readouterr().out == quiet
    assert "2/2" in terminal.text()
    assert "claim" in terminal.text()


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["check", "x", "--claims", "file.toml"],
        ["check", "x", "--timeout", "0"],
        ["check", "x", "--format", "yaml"],
        ["check", "x", "--bogus"],
        ["codegen", "--layer", "rmsnorm"],
        ["identify"],
        ["review"],
        ["--standalone"],
        ["--layer", "rmsnorm", "check", "x"],
        ["--formula", "nothing.x"],
        ["--timeout", "soon"],
    ],
)
def test_every_bad_argument_is_one_line_that_names_it_with_status_2(argv, capsys):
    err = _usage_error(argv, capsys)
    assert any(word in err for word in ("argument", "--", "COMMAND")), err


@pytest.mark.parametrize(
    "argv",
    [
        ["--timeout", "{}"],
        ["check", "slope_at_zero > 0", "--timeout", "{}"],
        ["review", "paper.tex", "--timeout", "{}"],
        ["identify", "--latex", "y = x", "--timeout", "{}"],
    ],
)
@pytest.mark.parametrize("seconds", ["0", "-1", "3600.5", "1e9", "nan", "inf"])
def test_every_timeout_is_more_than_0_and_at_most_an_hour(argv, seconds, capsys):
    """derive, check, review and identify each bound their --timeout the same way: 0 < t <= 3600."""
    err = _usage_error([word.format(seconds) for word in argv], capsys)
    assert f"argument --timeout: must be more than 0 and at most 3600 seconds, not {seconds}" in err


@pytest.mark.parametrize("command", [[], ["check", "slope_at_zero > 0"], ["review", "paper.tex"], ["identify"]])
def test_a_timeout_that_is_no_number_is_named_by_every_command(command, capsys):
    err = _usage_error([*command, "--timeout", "ten"], capsys)
    assert "argument --timeout: 'ten' is not a number of seconds" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--timeout", "3600", "--layer", "layernorm"],
        ["check", "slope_at_zero > 0", "--layer", "layernorm", "--timeout", "3600"],
        ["review", "missing-paper.tex", "--timeout", "3600"],
        ["identify", "--latex", "y = x", "--timeout", "3600"],
    ],
)
def test_a_timeout_of_an_hour_exactly_is_taken_by_every_command(argv, capsys):
    """3600 is within 0 < t <= 3600 for derive, check, review and identify alike: no command
    refuses it (review then names its missing file, which is another matter)."""
    with contextlib.suppress(SystemExit):
        main(argv)
    assert "--timeout" not in capsys.readouterr().err


def test_a_reader_that_stops_early_ends_several_verdicts_quietly():
    """``check a b c | head -1``: the verdicts after the pipe closed are not written, and nothing is
    said; the status never says every claim holds (0) when one was refuted or left undecided."""
    import subprocess
    import sys

    claims = ["slope_at_zero > 0", "slope_at_zero < 0", "slope_at_zero == 1/sqrt(epsilon)"]
    with subprocess.Popen(
        [sys.executable, "-m", "derivations", "check", *claims, "--no-cache"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        err = process.stderr.read()
        status = process.wait(timeout=300)
    assert first.startswith(b"[inline-1] proved")
    assert b"Traceback" not in err
    assert err == b""
    # 2 where the pipe closed before the last claim was decided; 1 (the refutation) where it did not.
    assert status in (1, 2)


def test_an_undecided_verdict_is_not_stored_when_its_reader_stopped_early(tmp_path):
    """A check's output is stored only where every verdict was decided (an error may be a time or
    memory bound): a reader that closed the pipe changes nothing, and an error verdict whose
    output went nowhere leaves the cache as the same check read in full does."""
    import os
    import subprocess
    import sys

    command = [sys.executable, "-m", "derivations", "check", "slop_at_zero < 0"]  # an error: no such name
    stored = {}
    for reader in ("present", "gone"):
        environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / reader)}
        read, write = os.pipe()
        if reader == "gone":
            os.close(read)  # every write breaks the pipe
        try:
            done = subprocess.run(command, stdout=write, stderr=subprocess.PIPE, cwd=ROOT, env=environment, timeout=300)
        finally:
            os.close(write)
            if reader == "present":
                os.close(read)
        assert (done.returncode, done.stderr) == (2, b"")
        stored[reader] = sorted(path.name for path in (tmp_path / reader).rglob("*") if path.is_file())
    assert stored["gone"] == stored["present"]


def test_identify_names_the_definition_file_it_cannot_read(tmp_path):
    """A binary, missing or empty --definition gave the codec's text, "No such file or directory"
    and "a side of the relation is empty", none naming the file."""
    (tmp_path / "binary.tex").write_bytes(b"\x8e\x00\x01")
    (tmp_path / "empty.tex").write_text("  \n")
    expected = {
        "binary.tex": "binary.tex: a binary file, not LaTeX",
        "missing.tex": "missing.tex: No such file or directory",
        "empty.tex": "the definition is empty",
    }
    for name, message in expected.items():
        done = _command("identify", "--definition", str(tmp_path / name), text=True)
        assert done.returncode == 2
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert message in done.stderr


def test_a_paper_without_relations_says_so(tmp_path):
    (tmp_path / "main.tex").write_text("\\section{A}\nNo relation: $x$.\n")
    done = _command("review", str(tmp_path / "main.tex"), text=True)
    assert done.returncode == 0, done.stderr
    assert "main.tex: no relation found" in done.stdout


def test_a_review_shows_a_progress_bar_ending_at_its_number_of_links(monkeypatch, capsys, tmp_path):
    """Three rows of chains hold seven links (a = b = c is two): the bar counts links, so it ends
    at 7/7, never past its total."""
    paper = tmp_path / "main.tex"
    paper.write_text(
        "$\\alpha = \\beta = \\zeta$, $\\xi = \\omega = \\kappa$ and $\\theta = \\iota = \\lambda = \\nu$.\n"
    )
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    main(["review", str(paper), "--out", str(tmp_path / "out")])
    capsys.readouterr()
    assert "7/7" in terminal.text(), terminal.text()
    # A handful of links (five or fewer) is quick: no bar.
    paper.write_text("$\\alpha = \\beta$, $\\xi = \\omega$ and $\\theta = \\iota$.\n")
    terminal.parts.clear()
    main(["review", str(paper), "--out", str(tmp_path / "out")])
    capsys.readouterr()
    assert "reviewing" not in terminal.text(), terminal.text()


class _ClosesAt:
    """A stdout whose reader goes away when the verdict of claim ``number`` is written."""

    encoding = "utf-8"

    def __init__(self, number):
        self.mark, self.parts = f"[inline-{number}]", []

    def write(self, text):
        if self.mark in text:
            raise BrokenPipeError
        self.parts.append(text)
        return len(text)

    def flush(self):
        pass


@pytest.mark.parametrize(("closes", "claims", "status"), [(2, 2, 0), (2, 3, 2), (3, 3, 0)])
def test_a_reader_gone_at_the_last_verdict_leaves_the_status_of_every_claim(monkeypatch, closes, claims, status):
    """Each claim holds. The reader goes at the last verdict's write: every claim was decided, so
    the status is theirs (0); it goes earlier: a claim after it was never decided (2)."""
    texts = ["slope_at_zero > 0", "slope_at_zero >= 0", "slope_at_zero == 1/sqrt(epsilon)"][:claims]
    out = _ClosesAt(closes)
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["check", "--layer", "rmsnorm", *texts]) == status
    assert "[inline-1] proved" in "".join(out.parts)


@pytest.mark.parametrize("binary", [True, False])
def test_standard_input_is_read_up_to_its_limit_and_refused_one_byte_past_it(monkeypatch, binary):
    """read_input(limit) returns exactly ``limit`` bytes whole, and refuses ``limit + 1`` rather than
    cutting them short (on a byte stream and on a text stream without one)."""
    import io

    from derivations.cli import read_input

    def stdin(data: bytes) -> object:
        return io.TextIOWrapper(io.BytesIO(data)) if binary else io.StringIO(data.decode())

    monkeypatch.setattr(sys, "stdin", stdin(b"a" * 10))
    assert read_input(10) == b"a" * 10
    monkeypatch.setattr(sys, "stdin", stdin(b"a" * 11))
    with pytest.raises(ValueError, match=r"^standard input is larger than 10 bytes$"):
        read_input(10)


@pytest.mark.parametrize("rest", [["spectral_norm <= 1/sqrt(epsilon)"], ["--layer", "rmsnorm", "slope_at_zero == 1"]])
@pytest.mark.parametrize("before", [["--no-cache"], ["--no-cache", "--no-cache"]])
def test_a_command_named_after_no_cache_runs_as_if_named_first(rest, before, capsys):
    """--no-cache before the command (derive's option, which every command takes) moves after it:
    the same output and status as the command named first."""
    command = "check"
    first = main([command, "--no-cache", *rest])
    expected = capsys.readouterr()
    assert main([*before, command, *rest]) == first
    assert capsys.readouterr() == expected


def test_every_option_whose_help_states_a_default_has_that_default():
    """`--help` is what a user reads: an option saying "(default: 300)" defaults to 300, in every
    command; the defaults it states in words ("every layer") are options with no value set."""
    import re

    from derivations.__main__ import _parser

    parser, commands = _parser()
    stated = 0
    for command in [parser, *(command.filled() for command in commands.values())]:
        for action in command._actions:
            found = re.search(r"\(default: ([^)]*)\)$", action.help or "")
            if found is None:
                continue
            stated += 1
            said = found.group(1)
            if re.fullmatch(r"-?[\d.]+", said):
                assert action.default == float(said), (command.prog, action.option_strings)
            elif " " in said or ":" in said:
                assert action.default is None, (command.prog, action.option_strings)
            else:
                assert action.default == said, (command.prog, action.option_strings)
    assert stated >= 5


@pytest.mark.parametrize(
    ("code", "status", "said"),
    [(None, 0, ""), (0, 0, ""), (3, 3, ""), ("the command's own words", 1, "the command's own words\n")],
)
def test_a_command_that_exits_ends_the_process_with_the_status_python_gives_it(code, status, said, monkeypatch, capsys):
    """`cli.finish` ends the process with the status ``sys.exit(code)`` would: 0 for None, the
    integer, or 1 with the text on stderr."""
    from derivations import cli

    class Ended(Exception):
        pass

    def end(value):
        raise Ended(value)

    def main(argv):
        sys.exit(code)

    monkeypatch.setattr(cli.interrupts, "one_line", lambda prog: None)  # leave pytest's Ctrl-C alone
    monkeypatch.setattr(cli.os, "_exit", end)
    with pytest.raises(Ended) as ended:
        cli.finish(main, "prog")
    assert ended.value.args == (status,)
    assert capsys.readouterr().err == said


@pytest.mark.parametrize(
    ("word", "meant"),
    [
        ("rmsnorm_g", "rmsnorm_gemma"),  # begun: the name it begins, though "rmsnorm" is spelt closer
        ("layernorm_std", "layernorm_std_eps"),  # the shortest it begins
        ("l2", "l2norm_clamped"),  # two letters are enough to begin a name
        ("rmsnrom", "rmsnorm"),  # begun by none: the closest spelling
        ("zzz", None),
    ],
)
def test_a_mistyped_name_is_the_known_one_it_begins_else_the_closest_spelling(word, meant):
    from derivations.cli import suggest

    assert suggest(word, LAYERS) == meant


@pytest.mark.parametrize("command", [["derive"], ["check", "response <= 1"]])
def test_a_definition_that_is_not_a_layer_exits_2_with_one_line(command, tmp_path, capsys):
    """An unreadable definition file is a usage error (exit 2), for check too, where 1 would
    mean a claim refuted."""
    path = tmp_path / "broken.tex"
    path.write_text("this is not a layer\n")
    assert main([*command[:1], "--definition", str(path), *command[1:]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "broken.tex" in err, err
