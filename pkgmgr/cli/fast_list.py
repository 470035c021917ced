"""`pkgmgr ext list -o json` answered without argparse and the rest of the command line (SPEC 12:
a fresh process within 3× `python3 -c pass`, which the full path's imports alone exceed).

`answer(argv)` recognises the plain spellings of the command — `ext list`, `ext ls` or `list`,
with `-o json`, `-ojson` or `--json`, and optionally `--home DIR` (`--home=DIR`) and `--scope
global`, in any order — and reads the global scope's `state.db` itself, with the store's own rules
(`pkgmgr.store.checks`), to print the document the full command line prints. It imports `os`,
`sys`, `sqlite3`, `json` and those rules; `platformdirs` only when neither `--home` nor
`PKGMGR_HOME` names the home.

It answers only when it is sure; whenever anything is not plainly so it returns None having
printed nothing, and `pkgmgr.cli.main` runs the full command line, which then answers (or
reports the error) as it always does: another option or word, a home that is not a plain
absolute path, a `pkgmgr.toml` (or anything in the way of looking for one) in the current
directory or above it, a missing `state.db`, one that is not at this pkgmgr's schema version or
cannot be opened read-only, a row the rules find damaged, an install in another host's folder,
any exception.
"""

from __future__ import annotations

import os
import sys

from pkgmgr.cli.secrets import scrub_secrets

# the characters urllib.parse.quote leaves as they are in a path (pkgmgr.store.db.connect_readonly)
_URI_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-~/")


def answer(argv: list[str]) -> int | None:
    """The exit status of `pkgmgr ARGV` when this module answered it, else None (nothing printed)."""
    request = recognise(argv)
    if request is None:
        return None
    try:
        document = listing(*request)
    except KeyboardInterrupt as exc:
        from pkgmgr.cli.app import failure

        return failure(exc, json_mode=True, verbose=False)
    except Exception:  # noqa: BLE001 - not sure: the full command line answers, or reports it
        return None
    if document is None:
        return None
    try:
        sys.stdout.write(document)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - as the full command line reports it
        from pkgmgr.cli.app import failure

        return failure(exc, json_mode=True, verbose=False)
    return 0


def recognise(argv: list[str]) -> tuple[str | None, bool] | None:
    """(`--home`'s value or None, whether `--scope global` was given) for a command line this
    module answers, else None."""
    words: list[str] = []
    home: str | None = None
    json_mode = scope_given = False
    index = 0
    while index < len(argv):
        arg = argv[index]
        value = argv[index + 1] if index + 1 < len(argv) else None
        if arg in ("--json", "-ojson") or (arg == "-o" and value == "json"):
            json_mode = True
            index += 2 if arg == "-o" else 1
            continue
        if arg in ("--home", "--scope"):
            if value is None or value.startswith("-"):
                return None
            index += 2
        elif arg.startswith(("--home=", "--scope=")):
            arg, value = arg.split("=", 1)
            index += 1
        elif arg.startswith("-"):
            return None
        else:
            words.append(arg)
            index += 1
            continue
        if arg == "--scope":
            if value != "global" or scope_given:
                return None
            scope_given = True
        else:
            if home is not None or not value:  # an empty --home means the default home: not plain
                return None
            home = value
    if not json_mode or words not in (["ext", "list"], ["ext", "ls"], ["list"]):
        return None
    return home, scope_given


def listing(home_arg: str | None, scope_given: bool) -> str | None:
    """What `pkgmgr ext list -o json` prints for the global scope of `home_arg` (or the default
    home), or None when the full command line must say it."""
    home = _home(home_arg)
    if home is None or not (scope_given or _surely_no_workspace()):
        return None
    items = _installed(home)
    if items is None:
        return None
    return scrub_secrets(render(items)) + "\n"  # what output.write_json writes


def render(items: list[dict[str, object]]) -> str:
    """`json.dumps({"extensions": items}, indent=2, ensure_ascii=False)` for entries of text and
    booleans (its pure-Python indenting encoder was a third of this path's own time)."""
    from json.encoder import encode_basestring  # the C function json.dumps uses for ensure_ascii=False

    if not items:
        return '{\n  "extensions": []\n}'
    entries = []
    for item in items:
        fields = ",\n".join(f"      {encode_basestring(key)}: {_JSON_BOOL[value] if isinstance(value, bool) else encode_basestring(value)}"  # type: ignore[arg-type]
                            for key, value in item.items())
        entries.append(f"    {{\n{fields}\n    }}")
    return '{\n  "extensions": [\n' + ",\n".join(entries) + "\n  ]\n}"


_JSON_BOOL = {True: "true", False: "false"}


def _home(given: str | None) -> str | None:
    """The home as `str(Path(...).absolute())` spells it (cli.app.make_context, cli.context.default_home),
    or None when that is not plainly the same string or the full command line would refuse it."""
    if given is not None:
        path = os.path.expanduser(given)
    else:
        env = os.environ.get("PKGMGR_HOME")
        if env:
            path = os.path.expanduser(env)
            if not os.path.isabs(path):
                return None  # refused (usage) by the full command line
        else:
            from platformdirs import user_data_dir

            path = user_data_dir("pkgmgr", appauthor=False)
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    # pathlib would drop empty and "." components and a trailing slash; normpath also folds "..",
    # which pathlib keeps: any difference is left to the full command line
    if path.startswith("//") or path != os.path.normpath(path):
        return None
    return path


def _surely_no_workspace() -> bool:
    """True when no directory from the current one up to the root holds anything named
    `pkgmgr.toml`: then the workspace discovery (store.scope.discover_workspace, which stops
    sooner, at $HOME, a filesystem boundary or another user's directory) finds none and has
    nothing to fail on. Any other answer of lstat (a file, a directory, a denied lookup) is for
    the full command line."""
    current = os.getcwd()
    while True:
        try:
            os.lstat(os.path.join(current, "pkgmgr.toml"))
        except FileNotFoundError:
            pass
        else:
            return False
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent


def _installed(home: str) -> list[dict[str, object]] | None:
    """`ext list`'s entries of the global scope at `home` (store.records.visible finding only the
    scope store's own installs), or None."""
    import sqlite3

    from pkgmgr.store.checks import (
        SCHEMA_VERSION,
        STORE_HOST,
        has_trees,
        install_path_problem,
        json_value,
        row_problem,
    )

    database = os.path.join(home, "state.db")
    os.stat(database)  # missing (or unreachable): the full command line decides what that means
    has_trees(os.path.join(home, "extensions"))  # what Scope.reader asks (it may raise)
    if not os.access(home, os.W_OK) or not _URI_PLAIN.issuperset(database):
        return None  # opened immutable, or a path to quote
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, isolation_level=None, timeout=30.0,
                           check_same_thread=False)
    try:
        conn.row_factory = sqlite3.Row  # store.db._configure, but for its text_factory: text that is
        conn.execute("PRAGMA busy_timeout = 30000")  # not UTF-8 raises here, and the full path reports it
        if int(conn.execute("PRAGMA user_version").fetchone()[0]) != SCHEMA_VERSION:
            return None
        items: list[dict[str, object]] = []
        for row in conn.execute("SELECT * FROM extensions WHERE host = ? ORDER BY name", (STORE_HOST,)):
            name, version, path = row["name"], row["version"], row["path"]
            if (row_problem("extensions", row) is not None or install_path_problem(name, version, path) is not None
                    or json_value(row["manifest"], dict) is None or not _texts(json_value(row["grants"], list))
                    or not _texts(json_value(row["tree_listing"], dict))):
                return None  # damaged: store.model.Installed.from_row says how
            items.append({"name": name, "version": version, "scope": "global", "enabled": bool(row["enabled"]),
                          "source": row["source_kind"], "verified": bool(row["verified"]),
                          "path": os.path.join(home, path), "pinned": bool(row["pinned"]), "host": "compozy"})
            if row["linked"] is not None:
                return None  # a development link: the full command line lists it, as linked
        if conn.execute("SELECT 1 FROM extensions WHERE host != ? LIMIT 1", (STORE_HOST,)).fetchone():
            return None  # installs in the folders of other hosts: store.records
    finally:
        conn.close()
    items.sort(key=lambda item: item["name"])  # type: ignore[arg-type, return-value]
    return items


def _texts(value: object) -> bool:
    """A JSON list or object (None: it did not parse) of text only: what Installed.from_row accepts."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
