"""Which host an extension is for, from its manifest file (SPEC 13).

`extension.toml`, or an `extension.json` that is not terva's -> compozy; an `extension.json`
with an `exec` key, or beside `theme.json`/`themes/theme.json` -> terva; `vera.extension.json`
-> vera; `extension.exs`, or a lone `<name>.exs` where no other host's manifest is -> eva.
A level holding two hosts' manifests is refused (`invalid_archive`, naming both) unless
`--host` picks one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import NotRegularFile, read_regular
from pkgmgr.hosts import HOSTS

if TYPE_CHECKING:
    from pkgmgr.hosts.base import Host
    from pkgmgr.install.options import InstallOptions
    from pkgmgr.install.plan import Fetched


def manifests(level: Path) -> tuple[dict[str, str], str | None]:
    """{host: its manifest file} found at `level` (a directory), and a lone `.exs` that would
    be Eva's if nothing else claims the level."""
    try:
        names = {e.name for e in os.scandir(level) if not e.is_dir(follow_symlinks=False)}
    except (FileNotFoundError, NotADirectoryError):
        return {}, None
    found: dict[str, str] = {}
    if "extension.toml" in names:
        found["compozy"] = "extension.toml"
    if "extension.json" in names:
        from pkgmgr.hosts import terva

        theme = any(os.path.exists(level / rel) for rel in terva.THEME_FILES)
        try:  # never blocks: a FIFO or a device is no manifest
            raw = read_regular(level / "extension.json", limit=terva.MANIFEST_MAX_BYTES, follow_symlinks=True)
        except (OSError, NotRegularFile):
            raw = b""
        if theme or terva.is_terva_manifest(raw):
            found["terva"] = "extension.json"
        elif "compozy" not in found:
            found["compozy"] = "extension.json"
    if "vera.extension.json" in names:
        found["vera"] = "vera.extension.json"
    if "extension.exs" in names:
        found["eva"] = "extension.exs"
    scripts = sorted(n for n in names if n.endswith(".exs"))
    lone = scripts[0] if len(scripts) == 1 and "extension.exs" not in names else None
    if lone is not None and not found:
        found["eva"] = lone
    return found, lone


def detect(level: Path, forced: str | None = None) -> str:
    """The host of the extension at `level`. `forced` (`--host`) picks one of several, and must
    name a host whose manifest is there. Raises `invalid_archive` and `usage`."""
    if forced is not None and forced not in HOSTS:
        raise PkgmgrError(f"unknown host {forced!r}; hosts are {', '.join(HOSTS)}", code=Code.USAGE)
    found, lone = manifests(level)
    if forced is not None:
        files = {"compozy": ("extension.toml", "extension.json"), "terva": ("extension.json",),
                 "vera": ("vera.extension.json",), "eva": ("extension.exs",)}[forced]
        if forced in found or (forced == "eva" and lone is not None) or any((level / f).is_file() for f in files):
            return forced
        what = ", ".join(f"{f} ({h})" for h, f in found.items()) or "none"
        raise PkgmgrError(f"no extension manifest of {forced} here (--host {forced}; found: {what})",
                          code=Code.INVALID_ARCHIVE, details={"found": found})
    if len(found) > 1:
        listed = " and ".join(f"{file} ({host})" for host, file in found.items())
        raise PkgmgrError(f"holds the manifests of two hosts: {listed}; pass --host to pick one",
                          code=Code.INVALID_ARCHIVE, details={"hosts": sorted(found)},
                          hint=f"--host {' or --host '.join(found)}")
    if not found:
        raise PkgmgrError("no extension manifest of any host here", code=Code.INVALID_ARCHIVE)
    return next(iter(found))


def is_script(path: Path) -> bool:
    """An Eva script given as an install ref: a `.exs` file that is not an archive."""
    if not str(path).endswith(".exs"):
        return False
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError:
        return False
    return not (magic.startswith((b"\x1f\x8b", b"PK")))


def _forced_host(fetched: Fetched, options: InstallOptions) -> str | None:
    """The host a fetched ref must be for: its registry entry's, else `--host` (None: any)."""
    forced = fetched.expects.host or getattr(options, "host", None)
    expected = fetched.expects.entry
    entry_host = getattr(expected, "host", None) if expected is not None else None
    if expected is not None and entry_host and entry_host != "compozy":
        if forced is not None and forced != entry_host:
            raise PkgmgrError(f"{expected.name} is a {entry_host} extension in its registry, not a {forced} one",
                              code=Code.USAGE)
        return entry_host
    return forced


def staged_host(fetched: Fetched, root: Path | None, options: InstallOptions) -> str:
    """The host of a staged tree (`root`), or "eva" for an Eva script staged as it is (`root`
    None). Raises `invalid_archive` and `usage` (a forced host the tree is not for)."""
    forced = _forced_host(fetched, options)
    if root is not None:
        return detect(root, forced)
    if forced not in (None, "eva"):
        raise PkgmgrError(f"{fetched.label or fetched.locator} is an Eva script, not a {forced} extension",
                          code=Code.INVALID_ARCHIVE)
    return "eva"


def for_host(name: str) -> Host:
    """The destination of `name` (terva, eva, vera)."""
    from pkgmgr.hosts.eva import Eva
    from pkgmgr.hosts.terva import Terva
    from pkgmgr.hosts.vera import Vera

    table = {"terva": Terva, "eva": Eva, "vera": Vera}
    if name not in table:
        raise PkgmgrError(f"unknown host {name!r}; hosts are {', '.join(HOSTS)}", code=Code.USAGE)
    return table[name]()


def source_host(fetched: Fetched, options: InstallOptions | None) -> Host:
    """Whose copy rules stage a source directory (`Host.copy_source`): the host its manifest names
    (or its registry entry or `--host`), else the default (pkgmgr's selection, as for Compozy).
    What the directory holds is judged after the copy, as before."""
    from pkgmgr.hosts.base import Host

    assert fetched.directory is not None
    try:
        name = detect(Path(fetched.directory), _forced_host(fetched, options) if options is not None else None)
    except PkgmgrError:
        name = "compozy"  # two hosts' manifests, or none: staged_host says so once the tree is staged
    return for_host(name) if name != "compozy" else Host()
