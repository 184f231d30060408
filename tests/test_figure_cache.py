"""``python -m figures`` recalls a set it drew only under the same key, and never trusts a bad entry.

That a recalled set is byte-identical to the one drawn is in test_figures.py, beside the draw it recalls."""

import pickle

import figures.__main__ as cli
from derivations import _cache


def test_a_changed_source_or_package_names_another_entry(monkeypatch):
    before = cli._key()
    real = _cache.tree
    monkeypatch.setattr(_cache, "tree", lambda root, *a: real(root, *a) + (b"edit" if root.name == "numeric" else b""))
    assert cli._key() != before
    monkeypatch.setattr(_cache, "tree", real)
    real_package = _cache.package
    monkeypatch.setattr(_cache, "package", lambda name: real_package(name) + (b"9.9" if name == "matplotlib" else b""))
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
    for payload in (b"not a pickle", pickle.dumps(("15175", {})), pickle.dumps((1, {"a.png": "text"}))):
        _cache.write(cli.ENTRY, payload, extra)
        assert cli._recalled(extra) is None
        assert cli.main(["--out", str(tmp_path / str(len(drawn)))]) == 0
    assert len(drawn) == 3
    assert [(path.name, path.read_bytes()) for path in (tmp_path / "2").iterdir()] == [("a.png", b"a PNG")]
    # A torn entry fails its checksum: the drawn set written over it is read back.
    path = _cache._path(cli.ENTRY, extra)
    path.write_bytes(path.read_bytes()[:-100])
    assert cli._recalled(extra) is None
    assert cli.main(["--out", str(tmp_path / "again")]) == 0
    assert len(drawn) == 4
    assert cli._recalled(extra) is not None


def test_an_empty_out_is_refused_in_one_line(capsys):
    import pytest

    with pytest.raises(SystemExit) as stop:
        cli.main(["--out", ""])
    assert stop.value.code == 2
    expected = "python -m figures: error: argument --out: must name a folder, not be empty"
    assert capsys.readouterr().err.strip() == expected
