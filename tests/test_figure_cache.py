"""``python -m figures`` recalls a set it drew only under the same key, and never trusts a bad entry.

That a recalled set is byte-identical to the one drawn is in test_figures.py, beside the draw it recalls."""

import hashlib
import json
import os
import pickle
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import figures.__main__ as cli
from derivations import cache as derivation_cache

ROOT = Path(__file__).resolve().parent.parent


def test_a_changed_source_or_package_names_another_entry(monkeypatch):
    before = cli._key()
    real = derivation_cache.tree
    monkeypatch.setattr(
        derivation_cache, "tree", lambda root, *a: real(root, *a) + (b"edit" if root.name == "numeric" else b"")
    )
    assert cli._key() != before
    monkeypatch.setattr(derivation_cache, "tree", real)
    real_package = derivation_cache.package
    monkeypatch.setattr(
        derivation_cache, "package", lambda name: real_package(name) + (b"9.9" if name == "matplotlib" else b"")
    )
    assert cli._key() != before
    monkeypatch.undo()
    monkeypatch.setenv("MATPLOTLIBRC", "/somewhere/else")
    assert cli._key() != before


def test_an_entry_that_is_not_a_verified_set_is_drawn_again(tmp_path, monkeypatch):
    extra = cli._key()
    drawn = []
    # A stand-in set, under a key of this test's own: the real one's entry is left alone.
    extra += b"this test"
    monkeypatch.setattr(cli, "_key", lambda: extra)
    monkeypatch.setattr(cli, "_drawn", lambda: drawn.append(1) or (1, {"a.png": b"a PNG"}))
    wrong = (
        {"count": "15175", "files": {}},
        {"count": 1, "files": {"a.png": "not base64!"}},
        {"count": 1, "files": {"../a.png": "YQ=="}},  # a path out of --out
        [1, {}],
    )
    for payload in (b"not JSON", *(json.dumps(value).encode() for value in wrong)):
        derivation_cache.write(cli.ENTRY, payload, extra)
        assert cli._recalled(extra) is None
        assert cli.main(["--out", str(tmp_path / str(len(drawn)))]) == 0
    assert len(drawn) == 5
    assert [(path.name, path.read_bytes()) for path in (tmp_path / "4").iterdir()] == [("a.png", b"a PNG")]
    # A torn entry fails its checksum: the drawn set written over it is read back.
    path = derivation_cache._path(cli.ENTRY, extra)
    path.write_bytes(path.read_bytes()[:-100])
    assert cli._recalled(extra) is None
    assert cli.main(["--out", str(tmp_path / "again")]) == 0
    assert len(drawn) == 6
    assert cli._recalled(extra) is not None


def test_an_empty_out_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--out", ""])
    assert stop.value.code == 2
    expected = "python -m figures: error: argument --out: must name a folder, not be empty"
    assert capsys.readouterr().err.strip() == expected


def _key_in(folder):
    code = "import figures.__main__ as cli; print(cli._key().hex())"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def test_a_matplotlibrc_in_the_current_folder_changes_the_key(tmp_path):
    plain, red = tmp_path / "plain", tmp_path / "red"
    plain.mkdir()
    red.mkdir()
    (red / "matplotlibrc").write_text("axes.edgecolor: red\n")
    assert _key_in(plain) == _key_in(plain)
    assert _key_in(red) != _key_in(plain)


class _Gadget:
    def __init__(self, sentinel):
        self.sentinel = sentinel

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(str(self.sentinel))}",)


def _old_checksum(name, payload):
    digest = hashlib.sha256()
    for part in (name.encode(), payload):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.digest()


@pytest.mark.parametrize("case", ["gadget", "bare checksum", "old format"])
def test_a_planted_set_is_never_used(case, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(cli, "_key", lambda: b"this test")
    monkeypatch.setattr(cli, "_drawn", lambda: (1, {"a.png": b"a PNG"}))
    sentinel, forged = tmp_path / "ran", pickle.dumps((1, {"a.png": b"forged"}))
    if case == "gadget":
        derivation_cache.write(cli.ENTRY, pickle.dumps(_Gadget(sentinel)), b"this test")  # sealed with the real key
    else:
        derivation_cache.write(cli.ENTRY, b"", b"this test")  # the folder and its key exist
        magic = derivation_cache.MAGIC if case == "bare checksum" else b"epsilon-layernorm derivation cache 1\n"
        derivation_cache._path(cli.ENTRY, b"this test").write_bytes(magic + _old_checksum(cli.ENTRY, forged) + forged)
    assert cli.main(["--out", str(tmp_path / "out")]) == 0
    assert "an earlier run" not in capsys.readouterr().out
    assert not sentinel.exists()
    assert (tmp_path / "out" / "a.png").read_bytes() == b"a PNG"
    assert cli._recalled(b"this test") == (1, {"a.png": b"a PNG"})


def test_the_drawn_sets_key_holds_the_matplotlibrc_that_was_read(tmp_path, monkeypatch):
    """Two matplotlibrc files at one path that say different things are two keys: the key holds
    the file's bytes (up to a mebibyte), not its path alone."""
    import matplotlib

    from figures import __main__ as drawing

    rc = tmp_path / "matplotlibrc"
    monkeypatch.setattr(matplotlib, "matplotlib_fname", lambda: str(rc))
    rc.write_text("lines.linewidth: 2\n")
    first = drawing._matplotlib()
    rc.write_text("lines.linewidth: 3\n")
    assert b"lines.linewidth: 3" in drawing._matplotlib()
    assert drawing._matplotlib() != first
