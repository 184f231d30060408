"""The README and the documentation pages: every command they show runs, and shows what they say.

- The README: at most 200 lines; each command in a ``console`` block is run and its output
  compared with the text below it (whitespace aside: long lines are wrapped there); the
  ``make`` commands are run as ``make -n`` (and ``make derive``'s command for real); the
  Python lines are run; every link and the figure resolve.
- The pages: every ``python -m derivations check ... # <verdict>`` line is run and must get
  that verdict; each construct of the claim reference has a proved and a refuted example;
  the ``console`` blocks are run and compared like the README's; the text carries no history.
- The generated blocks are checked fresh in tests/test_cli.py (tests/golden/readme.py).
- The site: ``mkdocs build --strict``, then tests/docs_browser.py in headless Chromium (slow).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import struct
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from test_figures import written  # noqa: F401 - the figure set drawn once per run

from derivations.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# The changelog page includes CHANGELOG.md, which is where the history goes.
PAGES = sorted(path for path in DOCS.glob("*.md") if path.name != "changelog.md")
VERDICT = re.compile(
    r"^python -m derivations check (?P<args>.*?)\s+# (?P<verdict>proved|refuted|supported|vacuous|error)$"
)
FENCE = re.compile(r"^```(?P<language>[\w-]*)\n(?P<body>.*?)^```$", re.S | re.M)


def fenced(text: str, language: str) -> list[tuple[int, str]]:
    """Each fenced block of ``language`` in ``text``: the line it starts on and its body."""
    return [
        (text.count("\n", 0, found.start()) + 1, found.group("body"))
        for found in FENCE.finditer(text)
        if found.group("language") == language
    ]


def sessions(body: str) -> list[tuple[str, str]]:
    """A console block's commands (after ``$ ``), each with the output shown below it."""
    out: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return [(command, "\n".join(lines)) for command, lines in out]


def words(text: str) -> str:
    return " ".join(text.split())


def run_shown(command: str) -> subprocess.CompletedProcess[str]:
    """A command as a reader types it, in the checkout, with this interpreter as the venv's."""
    argv = shlex.split(command)
    if argv[0] in (".venv/bin/python", "python"):
        argv[0] = sys.executable
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)


# --- the README ---------------------------------------------------------------------------


def test_the_readme_is_at_most_200_lines():
    assert len(README.read_text().splitlines()) <= 200


def readme_sessions() -> list[tuple[str, str]]:
    return [pair for _, body in fenced(README.read_text(), "console") for pair in sessions(body)]


def test_the_readme_shows_commands_with_their_output():
    assert len(readme_sessions()) >= 2


@pytest.mark.parametrize(
    ("command", "shown"), [pytest.param(command, shown, id=command[:70]) for command, shown in readme_sessions()]
)
def test_each_readme_command_prints_what_the_readme_shows(command, shown):
    done = run_shown(command)
    assert done.stderr == ""
    assert words(done.stdout) == words(shown), done.stdout


def readme_make_targets() -> list[str]:
    targets = []
    for _, body in fenced(README.read_text(), "sh"):
        for line in body.splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                assert argv[0] == "make", f"a README command no test runs: {line}"
                targets += argv[1:]
    return targets


def test_the_readme_make_commands_are_the_targets_they_say():
    """`make test` cannot run inside the suite it runs; `make -n` shows what each would run."""
    targets = readme_make_targets()
    assert targets == ["derive", "test"]
    for target, runs in (("derive", "-m derivations"), ("test", "-m pytest")):
        done = subprocess.run(
            ["make", "-n", "--no-print-directory", target], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert runs in done.stdout.splitlines()[-1], done.stdout


def test_every_make_target_the_readme_names_is_one():
    """`make figures`, `make docs` and the like, named in the README's text: each is a target."""
    named = sorted(set(re.findall(r"`make ([a-z-]+)`", README.read_text())))
    assert "docs" in named
    for target in named:
        done = subprocess.run(
            ["make", "-n", "--no-print-directory", target], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"make {target}: {done.stderr}"


def test_make_derive_prints_the_readme_formula():
    """What `make derive` runs, run: the README's formula block is a piece of its output."""
    block = re.search(r"<!-- formula:start -->\n```text\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    done = run_shown("python -m derivations")
    assert done.returncode == 0, done.stderr
    assert block.group(1) in done.stdout


def test_the_readme_python_lines_run_and_show_latex():
    """The Jupyter lines: the cell's value renders as LaTeX (`_repr_latex_`)."""
    (_, body), *others = fenced(README.read_text(), "python")
    assert not others
    tree = ast.parse(body)
    *statements, last = tree.body
    assert isinstance(last, ast.Expr)
    namespace: dict[str, object] = {}
    exec(compile(ast.Module(statements, []), "README.md", "exec"), namespace)
    shown = eval(compile(ast.Expression(last.value), "README.md", "eval"), namespace)
    assert r"\frac{1}{\sqrt{\varepsilon}}" in shown._repr_latex_()


def test_every_readme_link_and_image_resolves():
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text())
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local
    for link in local:
        assert (ROOT / link.split("#")[0]).exists(), link


def test_the_readme_figure_is_a_committed_png_under_docs():
    (image,) = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README.read_text())
    path = ROOT / image
    assert path.parent == DOCS / "assets" / "figures"
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width >= 800
    assert height >= 600


def test_the_documented_figures_are_those_python_m_figures_draws(written):  # noqa: F811 - the fixture
    """The PNGs under docs/assets/figures are byte for byte what `python -m figures` draws (the set
    tests/test_figures.py draws once per run)."""
    status, folder, *_ = written
    assert status == 0
    committed = sorted((DOCS / "assets" / "figures").glob("*.png"))
    assert [path.name for path in committed] == sorted(path.name for path in folder.glob("*.png"))
    for path in committed:
        assert path.read_bytes() == (folder / path.name).read_bytes(), f"{path.name}: copy it from make figures"


# --- the pages ----------------------------------------------------------------------------


def examples() -> list[tuple[str, list[str], str]]:
    """Every ``check ... # verdict`` line of the pages: where it is, its arguments, the verdict."""
    found = []
    for page in sorted(PAGES, key=lambda path: path.name != "claims.md"):
        for start, body in fenced(page.read_text(), "sh"):
            for offset, line in enumerate(body.splitlines(), start=1):
                shown = VERDICT.match(line.strip())
                if shown:
                    where = f"{page.name}:{start + offset}"
                    found.append((where, shlex.split(shown.group("args")), shown.group("verdict")))
    return found


# The claim reference's first examples, one per verdict, in make test; the rest in make test-slow.
FAST = 5


@pytest.mark.parametrize(
    ("argv", "verdict"),
    [
        pytest.param(argv, verdict, id=where, marks=() if m < FAST else pytest.mark.slow)
        for m, (where, argv, verdict) in enumerate(examples())
    ],
)
def test_each_documented_claim_gets_the_verdict_its_page_gives(argv, verdict, capsys):
    main(["check", *argv])
    out = capsys.readouterr().out
    first = out.splitlines()[0] if out else ""
    assert re.match(rf"\[inline\] {verdict}: ", first), out


def test_the_verdict_examples_cover_every_verdict():
    assert {verdict for _, _, verdict in examples()[:FAST]} == {"proved", "refuted", "supported", "vacuous", "error"}


def constructs() -> dict[str, list[str]]:
    """The claim reference's constructs (the ### sections under "Constructs") and their examples' verdicts."""
    text = (DOCS / "claims.md").read_text()
    part = text.split("\n## Constructs\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[str]] = {}
    for section in part.split("\n### ")[1:]:
        title, body = section.split("\n", 1)
        found[title] = [
            shown.group("verdict")
            for _, block in fenced(body, "sh")
            for line in block.splitlines()
            if (shown := VERDICT.match(line.strip()))
        ]
    return found


def test_every_construct_has_a_proved_and_a_refuted_example():
    found = constructs()
    assert len(found) >= 20
    for title, verdicts in found.items():
        assert {"proved", "refuted"} <= set(verdicts), title


def test_the_grammar_s_calls_each_appear_in_an_example():
    """Every call of the grammar is used by some example of the claim reference."""
    text = (DOCS / "claims.md").read_text()
    grammar = text.split("\n## The grammar\n", 1)[1].split("\n## ", 1)[0]
    calls = set(re.findall(r"\b([a-z]+)\(", grammar)) - {"e", "layer", "y"}
    used = " ".join(" ".join(argv) for _, argv, _ in examples())
    missing = sorted(call for call in calls if f"{call}(" not in used)
    assert not missing


def page_sessions() -> list[tuple[str, str, str]]:
    return [
        (page.name, command, shown)
        for page in PAGES
        for _, body in fenced(page.read_text(), "console")
        for command, shown in sessions(body)
    ]


@pytest.mark.parametrize(
    ("page", "command", "shown"),
    [pytest.param(page, command, shown, id=f"{page}: {command[:60]}") for page, command, shown in page_sessions()],
)
def test_each_page_command_prints_what_the_page_shows(page, command, shown):
    done = run_shown(command)
    assert done.stderr == ""
    assert words(done.stdout) == words(shown), f"{page}: {done.stdout}"


HISTORY = re.compile(
    r"\bissue \d+|\b\d{1,2} (January|February|March|April|May|June|July|August|September|October|November|December)\b"
    r"|\b(January|February|March|April|June|July|August|September|October|November|December)\b"
    r"|\b(session|this round|last run|hostile review)\b"
)


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_the_pages_say_what_is_not_how_it_came_to_be(page):
    """History (issue numbers, dates, rounds of work) goes to CHANGELOG.md."""
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        assert not HISTORY.search(line), f"{page.name}:{number}: {line}"


def test_every_page_is_in_the_navigation_and_every_entry_is_a_page():
    config = (ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r"^  - [^:]+: (\S+\.md)$", config, re.M))
    assert listed == {path.name for path in DOCS.glob("*.md")}


def test_the_changelog_has_unreleased_and_each_release():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    headings = re.findall(r"^## (\S+)", changelog, re.M)
    assert headings[0] == "Unreleased"
    assert version in headings
    assert (DOCS / "changelog.md").read_text().strip() == '--8<-- "CHANGELOG.md"'


def test_the_math_renders_from_files_in_the_site_never_a_cdn():
    """mkdocs.yml loads KaTeX from docs/assets/katex, and every font its stylesheet names first is there."""
    config = (ROOT / "mkdocs.yml").read_text()
    assert "http://" not in config
    assert "https://" not in config
    loaded = re.findall(r"^  - (assets/\S+\.(?:js|css))$", config, re.M)
    assert {
        "assets/katex/katex.min.js",
        "assets/katex/contrib/auto-render.min.js",
        "assets/katex/katex.min.css",
    } <= set(loaded)
    for path in loaded:
        assert (DOCS / path).is_file(), path
    css = (DOCS / "assets" / "katex" / "katex.min.css").read_text()
    fonts = set(re.findall(r"url\((fonts/[\w-]+\.woff2)\)", css))
    assert len(fonts) == 20
    for font in fonts:
        assert (DOCS / "assets" / "katex" / font).is_file(), font


def test_the_accuracy_block_is_on_its_page():
    text = (DOCS / "accuracy.md").read_text()
    assert "<!-- accuracy:start -->\n| function | dtype |" in text
    assert "<!-- accuracy:end -->" in text


# --- the site, in a browser ------------------------------------------------------------------


def _require(why: str | None) -> None:
    """Skip where the browser check cannot run; fail instead where CI requires it
    (.ci/run sets EPSILON_LAYERNORM_REQUIRE_BROWSER)."""
    if why is None:
        return
    if os.environ.get("EPSILON_LAYERNORM_REQUIRE_BROWSER"):
        pytest.fail(f"EPSILON_LAYERNORM_REQUIRE_BROWSER is set, but {why}")
    pytest.skip(why)


def _no_chromium() -> str | None:
    import docs_browser

    return "no chromium on PATH (apt-get install chromium)" if docs_browser.find_chromium() is None else None


def _no_mkdocs() -> str | None:
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        return "mkdocs is not installed (pip install -e '.[docs]')"
    return None


def _events(tmp_path: Path) -> None:
    """What the check reads from the DevTools events and from the site's folders, without a browser."""
    import docs_browser

    local = "http://127.0.0.1:8000/"
    events = [
        {"method": "Runtime.exceptionThrown", "params": {"exceptionDetails": {"text": "Uncaught", "exception": {}}}},
        {"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"value": "broken"}]}},
        {"method": "Runtime.consoleAPICalled", "params": {"type": "log", "args": [{"value": "fine"}]}},
        {"method": "Log.entryAdded", "params": {"entry": {"level": "error", "source": "network", "text": "404"}}},
        {"method": "Network.requestWillBeSent", "params": {"request": {"url": "https://cdn.example/katex.js"}}},
        {"method": "Network.requestWillBeSent", "params": {"request": {"url": local + "assets/katex/katex.min.js"}}},
        {"method": "Network.responseReceived", "params": {"response": {"status": 404, "url": local + "x"}}},
    ]
    found = docs_browser.problems_in(events, local)
    assert len(found) == 5
    assert "console.error: broken" in found
    assert not any("fine" in problem or "katex.min.js" in problem for problem in found)
    for folder in ("assets/katex", "search"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "index.html").write_text("")
    for page in ("conventions.html", "claims.html", "numeric.html", "index.html", "404.html"):
        (tmp_path / page).write_text("")
    assert docs_browser.pages(tmp_path) == ["conventions.html", "claims.html", "index.html", "numeric.html"]


def _made_to_fail(tmp_path: Path) -> None:
    """Pages made to fail, in Chromium: TeX left as text, math KaTeX did not typeset, a console
    error, a request outside the site."""
    import docs_browser

    _require(_no_chromium())
    for page, body in {
        "conventions": r"<p>the slope is \frac{1}{\sqrt{\varepsilon}}</p>",
        "claims": '<div class="arithmatex">\\[x\\]</div><script>console.error("broken")</script>'
        '<img src="https://example.invalid/x.png">',
    }.items():
        (tmp_path / f"{page}.html").write_text(f"<!doctype html><html><body>{body}</body></html>")
    failures = "\n".join(docs_browser.run(tmp_path, None, str(docs_browser.find_chromium())))
    assert "conventions.html: raw TeX in the rendered text" in failures
    assert "claims.html: math KaTeX did not typeset" in failures
    assert "claims.html: console.error: broken" in failures
    assert "claims.html: a request outside the site" in failures


def _built_site(tmp_path: Path) -> None:
    """`mkdocs build --strict`, then every page in Chromium: no raw TeX, no console error,
    nothing loaded from outside the site (what `make docs-check` runs)."""
    import docs_browser

    _require(_no_chromium() or _no_mkdocs())
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr
    failures = docs_browser.run(site, tmp_path / "screenshot.png", str(docs_browser.find_chromium()))
    assert not failures, "\n".join(failures)
    assert (tmp_path / "screenshot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "check",
    [
        pytest.param(_events, id="events"),
        pytest.param(_made_to_fail, id="made-to-fail", marks=pytest.mark.slow),
        pytest.param(_built_site, id="built-site", marks=pytest.mark.slow),
    ],
)
def test_the_browser_check(check, tmp_path):
    """tests/docs_browser.py: its reading of the browser's events (make test), then Chromium on
    pages made to fail and on the built site (make test-slow)."""
    check(tmp_path)
