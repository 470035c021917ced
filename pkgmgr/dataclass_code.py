"""The compiled methods of dataclasses, kept between runs beside pkgmgr's bytecode (issue 30).

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__` and `__hash__` (and, frozen,
`__setattr__` and `__delattr__`) as Python source and compiles it with `exec` every time its
module is imported. Python keeps a module's own bytecode in `__pycache__`, not these: at ~0.5 ms
a class, the ~50 classes an install loads cost ~25 ms of every run, more than the code of all of
pkgmgr's modules together.

`install()` makes the `exec` of the `dataclasses` module look the source up in a table of code
objects compiled by earlier runs, kept in one marshal file where Python keeps pkgmgr's `.pyc`
files (`__pycache__`, or under `PYTHONPYCACHEPREFIX`; `PYTHONDONTWRITEBYTECODE` means nothing is
written), or, where that folder cannot be written (a system-wide install: its `.pyc` files were
compiled when it was installed, this table cannot be), in the user's cache folder, one file per
pkgmgr version; `save()` writes the table back when a run compiled something new. A source is compiled
exactly as `exec` compiles it (same file name, mode and flags), so a class is the same with or
without the table; a table written by another interpreter, unreadable or too large is ignored
(and replaced by the next `save()`), as a stale `.pyc` is. The file is as trusted as the `.pyc`
files beside it: pkgmgr writes it, whoever can replace it can replace those.
"""

import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from pkgmgr.fsutil import atomic_write_bytes, read_regular

FILE_NAME = f"dataclass-methods.{sys.implementation.cache_tag}.marshal"
MAX_BYTES = 4 * 1024 * 1024
MAX_SOURCES = 4096  # pkgmgr defines ~200 dataclasses; a class made at run time can't grow it past this

_table: dict[str, CodeType] | None = None
_learnt = False


def table_path() -> str:
    """Where `importlib.util.cache_from_source` puts the bytecode of this package's modules."""
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.pycache_prefix:
        return os.path.join(sys.pycache_prefix, here.lstrip(os.sep), FILE_NAME)
    return os.path.join(here, "__pycache__", FILE_NAME)


def user_table_path() -> str:
    """The table's place where `table_path()` cannot be written: the user's cache folder."""
    from platformdirs import user_cache_dir  # only then: ~1 ms

    from pkgmgr import __version__

    return os.path.join(user_cache_dir("pkgmgr"), "python", f"{__version__}.{FILE_NAME}")


def install() -> None:
    """Load the table and route dataclasses' `exec` through it (once per process)."""
    global _table
    if _table is not None:
        return
    import dataclasses

    table = _load(table_path())
    if table is None and not sys.dont_write_bytecode:
        table = _load(user_table_path())
    _table = table or {}
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # a module global shadows the builtin


def save() -> None:
    """Write the table back if this run compiled a source it did not hold: beside the bytecode,
    else in the user's cache folder. Never raises: the table is a cache, and a run that cannot
    keep it has lost nothing but time."""
    global _learnt
    if not _learnt or _table is None or sys.dont_write_bytecode:
        return
    data = marshal.dumps((sys.version, _table))
    if len(data) > MAX_BYTES:
        return
    for where in (table_path, user_table_path):
        path = where()
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            atomic_write_bytes(Path(path), data, durable=False)
        except OSError:
            continue
        _learnt = False
        return


def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    global _learnt
    if isinstance(source, str) and _table is not None:
        code = _table.get(source)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            if len(_table) < MAX_SOURCES:
                _table[source] = code
                _learnt = True
        source = code
    exec(source, globals, locals)


def _load(path: str) -> dict[str, CodeType] | None:
    """The table at `path`; None when there is none this user can read, {} when the file is not
    a table of this interpreter's (the next `save()` replaces it)."""
    try:
        data = read_regular(path, limit=MAX_BYTES)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    except OSError:
        return {}
    if len(data) > MAX_BYTES:
        return {}
    try:
        version, table = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return {}
    if version != sys.version or not isinstance(table, dict):
        return {}
    return {source: code for source, code in table.items() if isinstance(source, str) and isinstance(code, CodeType)}
