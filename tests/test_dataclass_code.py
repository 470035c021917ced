"""`pkgmgr.dataclass_code`: the methods `@dataclass` generates, compiled once and kept beside the
bytecode. A class made from the table is the one `dataclasses` makes (the same code, byte for
byte, and the same behaviour); a table that is damaged, foreign, too large or not a regular file
is ignored and rewritten; a second run compiles nothing; nothing is written where Python writes
no bytecode."""

from __future__ import annotations

import builtins
import dataclasses
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pkgmgr import dataclass_code

REPO = Path(__file__).resolve().parents[1]


def _classes() -> dict[str, type]:
    """One of each kind of dataclass pkgmgr writes, and a few it does not."""

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        """A record."""
        name: str
        count: int = 0
        tags: tuple[str, ...] = ()
        extra: dict[str, Any] = dataclasses.field(default_factory=dict, hash=False, compare=False, repr=False)

    @dataclasses.dataclass
    class Mutable:
        items: list[int] = dataclasses.field(default_factory=list)
        _: dataclasses.KW_ONLY
        flag: bool = False

    @dataclasses.dataclass(order=True, slots=True)
    class Ordered:
        major: int
        minor: int = 0

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class KeywordsOnly:
        path: str
        mode: int = 0o644

    return {"Frozen": Frozen, "Mutable": Mutable, "Ordered": Ordered, "KeywordsOnly": KeywordsOnly}


def _methods(cls: type) -> dict[str, bytes]:
    return {name: marshal.dumps(value.__code__) for name, value in sorted(vars(cls).items())
            if callable(value) and hasattr(value, "__code__") and value.__code__.co_filename == "<string>"}


@pytest.fixture
def fresh_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """dataclass_code as in a new process whose table lives in `tmp_path` (returned: the file)."""
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(dataclass_code, "_table", None)
    monkeypatch.setattr(dataclass_code, "_learnt", False)
    monkeypatch.setattr(dataclasses, "exec", builtins.exec, raising=False)  # restored after the test
    return Path(dataclass_code.table_path())


def _install_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the next process does: load the table from its file, route `exec` through it."""
    monkeypatch.setattr(dataclass_code, "_table", None)
    monkeypatch.setattr(dataclass_code, "_learnt", False)
    dataclass_code.install()


def test_the_table_lives_where_python_keeps_the_bytecode(fresh_table: Path, tmp_path: Path) -> None:
    package = Path(dataclass_code.__file__).resolve().parent
    assert fresh_table == tmp_path / "pycache" / str(package).lstrip(os.sep) / dataclass_code.FILE_NAME
    assert sys.implementation.cache_tag in fresh_table.name


def test_a_class_made_from_the_table_is_the_class_dataclasses_makes(fresh_table: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _classes()  # no table: dataclasses' own exec
    dataclass_code.install()
    learning = _classes()  # compiled by the table, then kept
    dataclass_code.save()
    assert fresh_table.is_file()
    _install_fresh(monkeypatch)
    assert dataclass_code._table, "the table was not read back"
    cached = _classes()
    assert not dataclass_code._learnt, "a source the table holds was compiled again"
    for name, cls in plain.items():
        assert _methods(cls), name
        assert _methods(learning[name]) == _methods(cls) == _methods(cached[name]), name

    Frozen, Ordered = cached["Frozen"], cached["Ordered"]
    record = Frozen("a", 2, ("x",), {"k": 1})
    assert record == Frozen("a", 2, ("x",), {"other": 2}) and hash(record) == hash(Frozen("a", 2, ("x",)))
    assert repr(record).endswith(".Frozen(name='a', count=2, tags=('x',))")
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.name = "b"  # type: ignore[misc]
    assert Ordered(1, 2) < Ordered(1, 3) and not hasattr(Ordered(1), "__dict__")
    assert cached["Mutable"]().items == [] and cached["Mutable"]().items is not cached["Mutable"]().items
    with pytest.raises(TypeError):
        cached["KeywordsOnly"]("positional")
    assert Frozen.__doc__ == "A record."


@pytest.mark.parametrize("content", [
    pytest.param(b"", id="empty"),
    pytest.param(b"\x00garbage", id="garbage"),
    pytest.param(marshal.dumps(("2.7.18 (default)", {})), id="another interpreter"),
    pytest.param(marshal.dumps(sys.version), id="not a pair"),
    pytest.param(marshal.dumps((sys.version, ["a list"])), id="not a table"),
    pytest.param(marshal.dumps((sys.version, {"def f(): pass": b"not code", 7: compile("1", "<string>", "exec")})),
                 id="wrong types"),
    pytest.param(b"\xe3" * (dataclass_code.MAX_BYTES + 1), id="too large"),
])
def test_a_table_that_is_not_one_is_ignored_then_rewritten(fresh_table: Path, monkeypatch: pytest.MonkeyPatch,
                                                           content: bytes) -> None:
    fresh_table.parent.mkdir(parents=True)
    fresh_table.write_bytes(content)
    dataclass_code.install()
    assert dataclass_code._table == {}
    made = _classes()
    assert made["Frozen"]("a") == made["Frozen"]("a")
    dataclass_code.save()
    _install_fresh(monkeypatch)
    assert dataclass_code._table and all(isinstance(key, str) for key in dataclass_code._table)


def test_a_link_or_a_fifo_in_place_of_the_table_is_not_read(fresh_table: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    dataclass_code.install()
    _classes()
    dataclass_code.save()
    real = tmp_path / "elsewhere.marshal"
    os.replace(fresh_table, real)
    fresh_table.symlink_to(real)
    _install_fresh(monkeypatch)
    assert dataclass_code._table == {}
    fresh_table.unlink()
    os.mkfifo(fresh_table)
    _install_fresh(monkeypatch)  # refused unread: a FIFO never blocks the start of a command
    assert dataclass_code._table == {}


def test_nothing_is_written_where_python_writes_no_bytecode(fresh_table: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    dataclass_code.install()
    _classes()
    dataclass_code.save()
    assert not fresh_table.exists() and not fresh_table.parent.exists()
    assert not (tmp_path / "user-cache").exists()


def test_where_the_bytecode_folder_cannot_be_written_the_table_is_kept_in_the_users_cache(
        fresh_table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr import __version__

    fresh_table.parent.parent.mkdir(parents=True)
    fresh_table.parent.write_text("a file where the directory would be")  # as a read-only site-packages refuses it
    dataclass_code.install()
    _classes()
    dataclass_code.save()
    kept = tmp_path / "user-cache" / "pkgmgr" / "python" / f"{__version__}.{dataclass_code.FILE_NAME}"
    assert kept.is_file() and fresh_table.parent.is_file()
    _install_fresh(monkeypatch)
    assert dataclass_code._table, "the next run did not read the table from the user's cache"
    _classes()
    assert not dataclass_code._learnt


def test_an_unwritable_place_costs_nothing_but_the_table(fresh_table: Path, tmp_path: Path) -> None:
    fresh_table.parent.parent.mkdir(parents=True)
    fresh_table.parent.write_text("a file where the directory would be")
    (tmp_path / "user-cache").write_text("and a file where the user's cache would be")
    dataclass_code.install()
    _classes()
    dataclass_code.save()  # no exception: the command it ends has done its work
    assert fresh_table.parent.is_file() and (tmp_path / "user-cache").is_file()


def test_the_table_stops_growing_at_its_bound(fresh_table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataclass_code, "MAX_SOURCES", 3)
    dataclass_code.install()
    made = _classes()
    assert dataclass_code._table is not None and len(dataclass_code._table) == 3
    assert made["Frozen"]("a").count == 0 and made["Ordered"](1) < made["Ordered"](2)


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from pkgmgr.cli import main; sys.exit(main())", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_a_second_run_of_a_command_compiles_no_dataclass_method(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    env["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")
    home = tmp_path / "home"
    first = _cli(env, "--home", str(home), "hosts", "-o", "json")
    assert first.returncode == 0, first.stderr
    table = tmp_path / "pycache" / str(Path(dataclass_code.__file__).resolve().parent).lstrip(os.sep) / \
        dataclass_code.FILE_NAME
    written = table.read_bytes()
    version, sources = marshal.loads(written)
    assert version == sys.version and len(sources) > 20
    second = _cli(env, "--home", str(home), "hosts", "-o", "json")
    assert second.returncode == 0 and second.stdout == first.stdout
    assert table.read_bytes() == written, "the second run compiled a source the table held, and saved it"
