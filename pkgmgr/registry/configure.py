"""The operator's side of the configured registries (SPEC 5.2, 5.4a): `registry add` and
`registry remove` (the rules for recording a registry in `config.toml` and for forgetting one),
`registry list` and `registry refresh`.

A new registry has a valid name that is not taken and not `default`, a source that parses and
is allowed; unless told otherwise its registry.toml is read once first (a source that cannot be
read is refused and nothing is recorded), and the serial seen then is the rollback baseline. A
signed registry's initial root is verified and pinned, its metadata read through TUF at once;
any failure leaves nothing recorded. Removing a registry forgets its remembered serial and
checksums, its cached files and its trusted TUF metadata.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.config import Config, RegistryConfig
from pkgmgr.errors import Code, PkgmgrError, io_error
from pkgmgr.fsutil import user_path
from pkgmgr.patterns import REGISTRY_NAME

if TYPE_CHECKING:
    from pkgmgr.registry.readers import SourceSpec
    from pkgmgr.registry.session import Session

DEFAULT_PRIORITY = 100


@dataclass(frozen=True)
class NewRegistry:
    """What `registry add` was asked to record. `root` (a file) or `root_sha256` (the sha256 of
    the registry's `metadata/1.root.json`) makes it signed; `check=False` records it unread."""

    name: str
    source: str
    priority: int | None = None
    insecure: bool = False
    check: bool = True
    root: str | None = None
    root_sha256: str | None = None


def add_registry(home: Path, config: Config, new: NewRegistry, *, offline: bool = False,
                 warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Record `new` in `home`'s config.toml; returns what was added (name, source, priority,
    insecure, serial, signed, root_sha256 when signed). Raises `usage` for a bad or taken name
    or a source already configured (signed), `registry_signature_invalid` when
    `policy.require_signed` refuses an unsigned one or its root is not the pinned one, and the
    read's error when its registry.toml cannot be read (nothing recorded)."""
    import tomlkit

    from pkgmgr.config import edit_config
    from pkgmgr.registry.client import DEFAULT_NAME
    from pkgmgr.registry.readers import check_source_allowed, parse_source

    name = new.name
    if not REGISTRY_NAME.fullmatch(name):
        raise PkgmgrError(f"{name!r} is not a registry name (lower-case letters, digits, '-' and '_')", code=Code.USAGE)
    if name == DEFAULT_NAME:
        raise PkgmgrError("'default' is the registry shipped with pkgmgr; choose another name", code=Code.USAGE)
    spec = parse_source(new.source)
    check_source_allowed(spec, insecure=new.insecure)
    def session() -> Session:
        from pkgmgr.registry.session import Session

        return Session(home, config, offline=offline, warn=warn)

    for existing in config.registries:
        if existing.name == name:
            if _reestablishing(home, existing, new, spec):
                return _reestablish(home, config, existing, new, spec, session, offline=offline)
            raise PkgmgrError(f"a registry named {name} already exists ({existing.source})", code=Code.USAGE,
                              hint=f"'pkgmgr registry remove {name}' first to replace it")
    priority = new.priority if new.priority is not None else DEFAULT_PRIORITY

    pinned = None
    if new.root or new.root_sha256:
        pinned = _pin_root(home, config, new, spec, session, offline=offline)  # verified and read through TUF at once, else refused
    elif config.require_signed:
        raise PkgmgrError(f"policy.require_signed refuses the unsigned registry {name} ({spec.text})",
                          code=Code.REGISTRY_SIGNATURE_INVALID, details={"registry": name},
                          hint="add it with its TUF root: --root FILE or --root-sha256 HEX")
    reading = None if offline or not new.check or pinned is not None else session()
    try:
        registry = None if reading is None else _check_readable(
            reading, RegistryConfig(name, spec.text, priority, insecure=bool(new.insecure)), spec)
        with edit_config(home) as doc:
            if "registries" not in doc:
                doc.add("registries", tomlkit.table(is_super_table=True))
            table = tomlkit.table()
            table["source"] = spec.text
            if new.priority is not None:
                table["priority"] = new.priority
            if new.insecure:
                table["insecure"] = True
            if pinned is not None:
                table["root_sha256"] = pinned
            doc["registries"][name] = table
        serial = None
        if registry is not None:
            serial = registry.meta().serial
            registry.remember()  # the serial seen when the operator added it: the rollback baseline
    finally:
        if reading is not None:
            reading.close()
    added: dict[str, Any] = {"name": name, "source": spec.text, "priority": priority,
                             "insecure": bool(new.insecure), "serial": serial, "signed": pinned is not None}
    if pinned is not None:
        from pkgmgr.registry.trustroot import trusted_state

        added["root_sha256"] = trusted_state(home, spec.text).root_sha256 or pinned
    return added


def _root_unreadable(given: str, exc: OSError) -> PkgmgrError:
    """`--root FILE` that cannot be read: `io_error` when the disk refuses it (permission denied, a
    failing device: SPEC 11), else `not_found` (not there, a directory on the way)."""
    return io_error(exc, user_path(given)) or PkgmgrError(f"--root {given}: cannot read: {exc.strerror or exc}",
                                                         code=Code.NOT_FOUND)


def _reestablishing(home: Path, existing: RegistryConfig, new: NewRegistry, spec: SourceSpec) -> bool:
    """`registry add` of a signed registry already configured under that name, from the same
    source with a root, while its trusted root is damaged (missing, truncated, not signed by its
    keys): it re-establishes the trust (`_reestablish`), nothing else."""
    if existing.root_sha256 is None or existing.source != spec.text or not (new.root or new.root_sha256):
        return False
    from pkgmgr.registry.signed import trusted_root_problem

    return trusted_root_problem(home, spec.text) is not None


def _reestablish(home: Path, config: Config, existing: RegistryConfig, new: NewRegistry, spec: SourceSpec,
                 open_session: Callable[[], Session], *, offline: bool) -> dict[str, Any]:
    """Trust again the root pinned when `existing` was added (`--root FILE` whose sha256 is that
    pin, or `--root-sha256` the pin itself), verified as when it was added; config.toml is left
    as it is. Raises `registry_signature_invalid` for another root (nothing recorded)."""
    from dataclasses import replace

    from pkgmgr.registry.signed import root_sha256
    from pkgmgr.registry.trustroot import reestablish_hint

    given = str(new.root_sha256 or "").strip().lower()
    if new.root:
        from pkgmgr.fsutil import read_regular

        try:
            given = root_sha256(read_regular(user_path(new.root), limit=4 * 1024 * 1024, follow_symlinks=True))
        except OSError as exc:
            raise _root_unreadable(new.root, exc) from None
    if given != existing.root_sha256:
        raise PkgmgrError(f"registry {existing.name} was added with the root {existing.root_sha256}, not {given}: "
                          "pkgmgr re-establishes only the root it pinned", code=Code.REGISTRY_SIGNATURE_INVALID,
                          details={"registry": existing.name, "expected": existing.root_sha256, "actual": given},
                          hint=f"to trust another root, run 'pkgmgr registry remove {existing.name}' first; "
                               f"{reestablish_hint(existing)}")
    others = replace(config, registries=tuple(r for r in config.registries if r.name != existing.name))
    pinned = _pin_root(home, others, replace(new, insecure=new.insecure or existing.insecure), spec, open_session,
                       offline=offline)
    from pkgmgr.registry.trustroot import trusted_state

    return {"name": existing.name, "source": spec.text, "priority": existing.priority, "insecure": existing.insecure,
            "serial": None, "signed": True, "root_sha256": trusted_state(home, spec.text).root_sha256 or pinned,
            "reestablished": True}


def remove_registry(home: Path, config: Config, name: str, *, offline: bool = False,
                    warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Drop registry `name` from `home`'s config.toml and forget its rollback memory, cached
    files and trusted TUF metadata; returns its name and source. Raises `usage` for the shipped
    `default` and `not_found` for a name not configured."""
    from pkgmgr.config import edit_config
    from pkgmgr.registry.client import DEFAULT_NAME, Registry
    from pkgmgr.registry.session import Session
    from pkgmgr.registry.trustroot import forget

    if name == DEFAULT_NAME:
        raise PkgmgrError("the shipped registry 'default' cannot be removed", code=Code.USAGE)
    found = next((r for r in config.registries if r.name == name), None)
    if found is None:
        raise PkgmgrError(f"no registry named {name!r} is configured", code=Code.NOT_FOUND,
                          hint="'pkgmgr registry list' shows the configured registries")
    with edit_config(home) as doc:
        del doc["registries"][name]
        if not doc["registries"]:
            del doc["registries"]
    session = Session(home, config, offline=offline, warn=warn)
    try:
        registry = Registry(found, session)
        session.memory.forget(registry.source)
        registry.cache.clear()
        forget(home, registry.source)  # its trusted TUF metadata
    finally:
        session.close()
    return {"name": found.name, "source": registry.source}


def registry_rows(session: Session, warn: Callable[[str], None]) -> list[dict[str, Any]]:
    """`registry list`: each registry the session sees, in the order resolution consults them,
    with its remembered serial (the shipped one's read now; a failure to read it is a warning)."""
    rows = []
    for registry in session.registries.ordered:
        serial = registry.remembered_serial()
        if registry.exempt:
            try:
                serial = registry.meta().serial
            except PkgmgrError as error:
                warn(error.message.splitlines()[0])
        rows.append({**registry.to_json(), "serial": serial})
    return rows


def refresh_registries(session: Session, name: str | None = None,
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], PkgmgrError | None]:
    """`registry refresh`: re-read registry `name` (every registry when None) — online never
    confirmed by a 304 (SPEC 5.2) — and remember what was seen. What was refreshed (serial,
    expiry, how many extensions), what failed with its error, and the first failure."""
    from pkgmgr.registry.index_format import format_datetime

    refreshed: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    error: PkgmgrError | None = None
    targets = [session.registries.get(name)] if name else session.registries.ordered
    for registry in targets:
        if not session.offline:
            registry.cache.drop_validators()  # SPEC 5.2: re-read it, never confirmed by a 304
        summary: dict[str, Any] = {}
        try:
            meta = registry.meta()
            if meta.format >= 2:  # the local search index, caught up from the changes log
                from pkgmgr.registry.search_index import sync

                local, report = sync(registry)
                local.close()
                count: int | None = report.extensions
                summary = {"summary": {"mode": report.mode, "files": report.files, "bytes": report.bytes}}
            else:
                index = registry.index()
                count = None if index is None else len(index.extensions)
            registry.remember()
        except PkgmgrError as exc:
            error = error or exc
            failed.append({"name": registry.name, "source": registry.source, "error": exc.to_json()})
            continue
        refreshed.append({"name": registry.name, "source": registry.source, "serial": meta.serial,
                          "expires": format_datetime(meta.expires), "extensions": count, **summary})
    return refreshed, failed, error


def _check_readable(session: Session, config: RegistryConfig, spec: SourceSpec) -> Any:
    """The registry `config` describes, its registry.toml read once; raises that read's error
    (`not_found` for a directory that does not exist), saying how to record it anyway."""
    from pkgmgr.registry.client import Registry

    registry = Registry(config, session)
    try:
        registry.meta()
    except PkgmgrError as error:
        error.message = f"{error.message}\nnothing was recorded"
        error.args = (error.message,)
        error.hint = f"check the source, or 'pkgmgr registry add {config.name} {spec.text} --no-check' to record it anyway"
        raise
    return registry


def _pin_root(home: Path, config: Config, new: NewRegistry, spec: SourceSpec, open_session: Callable[[], Session],
              *, offline: bool) -> str:
    """Verify and pin a signed registry's initial root (SPEC 5.4a): from `new.root` (a file), or
    its `metadata/1.root.json` when its sha256 is `new.root_sha256`. Online, the registry's
    metadata and registry.toml are read through TUF at once; any failure leaves nothing recorded.
    Returns the pinned root's sha256."""
    from pkgmgr.registry.client import Registry
    from pkgmgr.registry.signed import check_root, root_sha256
    from pkgmgr.registry.trustroot import forget

    name = new.name
    for existing in config.registries:
        if existing.source == spec.text:
            raise PkgmgrError(f"{spec.text} is already configured as registry {existing.name}", code=Code.USAGE,
                              hint=f"'pkgmgr registry remove {existing.name}' first to add it signed")
    session = open_session()
    try:
        probe = Registry(RegistryConfig(name, spec.text, insecure=new.insecure, root_sha256="0" * 64), session)
        if new.root:
            path = user_path(new.root)
            from pkgmgr.fsutil import NotRegularFile, read_regular

            try:  # often the registry's own metadata/1.root.json: never blocks on a FIFO
                data = read_regular(path, limit=4 * 1024 * 1024, follow_symlinks=True)
            except NotRegularFile as exc:
                raise PkgmgrError(f"--root {new.root}: is {exc.kind}, not a regular file", code=Code.INVALID_INDEX,
                                  path=str(path)) from None
            except OSError as exc:
                raise _root_unreadable(new.root, exc) from None
        else:
            wanted = str(new.root_sha256).strip().lower()
            if not re.fullmatch(r"[0-9a-f]{64}", wanted):
                raise PkgmgrError(f"--root-sha256 {new.root_sha256!r} is not 64 hexadecimal digits", code=Code.USAGE)
            data = _first_root(probe)
            if root_sha256(data) != wanted:
                raise PkgmgrError(f"registry {name}: metadata/1.root.json has sha256 {root_sha256(data)}, not the "
                                  f"pinned {wanted}", code=Code.REGISTRY_SIGNATURE_INVALID,
                                  details={"registry": name, "expected": wanted, "actual": root_sha256(data)})
        check_root(data, name)
        pinned = root_sha256(data)
        forget(home, spec.text)
        probe.config = RegistryConfig(name, spec.text, insecure=new.insecure, root_sha256=pinned)
        probe.bootstrap = data
        if offline:
            probe.persist_root()
        else:
            probe.meta()
            probe.remember()
        return pinned
    except BaseException:
        forget(home, spec.text)
        raise
    finally:
        session.close()


def _first_root(registry: Any) -> bytes:
    """`metadata/1.root.json` of a registry, through pkgmgr's network layer (or its directory)."""
    from pkgmgr.registry.readers import make_reader
    from pkgmgr.registry.signed import CONFIG, NetFetcher, base_url_of, tuf_error
    from pkgmgr.registry.trustroot import METADATA_DIR

    plain = make_reader(registry.spec, registry.session, registry.cache, insecure=registry.insecure)
    base, directory = base_url_of(plain)
    fetcher = NetFetcher(registry.session, registry.cache, base, directory=directory, insecure=registry.insecure,
                         immutable=False)
    try:
        return fetcher.get(f"{base}{METADATA_DIR}/1.root.json", CONFIG.root_max_length, conditional=False)
    except Exception as exc:  # noqa: BLE001 - mapped to its SPEC code
        raise tuf_error(exc, registry.name) from None
