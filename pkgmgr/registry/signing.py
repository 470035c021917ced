"""The maintainer's side of a signed registry (SPEC 5.4a), with python-tuf's metadata API.

`metadata/` beside `registry.toml` holds `N.root.json` (and `root.json`, a copy of the newest),
`targets.json`, `snapshot.json` and `timestamp.json` (no consistent snapshots: a static host or
a git repository serves one version of each). The targets are `registry.toml`, `index.json`,
every entry file and every file under `archives/`. One Ed25519 key per role, kept outside the
index in a keys directory: `<role>.key` (unencrypted PKCS#8 PEM, as securesystemslib writes
it, mode 0600) and `<role>.pub`. Every re-signing raises the versions of targets, snapshot
and timestamp (TUF's versions are the signed registry's serial) and sets their expiry.

This module imports `tuf`, `securesystemslib` and `cryptography`: import it only to sign.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
)
from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import (
    Metadata,
    MetaFile,
    Root,
    Snapshot,
    TargetFile,
    Targets,
    Timestamp,
)
from tuf.api.serialization.json import JSONSerializer

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import atomic_write_bytes
from pkgmgr.registry.index_format import INDEX_FILE, REGISTRY_FILE
from pkgmgr.registry.trustroot import METADATA_DIR

ROLES = ("root", "targets", "snapshot", "timestamp")
DEFAULT_TIMESTAMP_EXPIRY = timedelta(days=7)
DEFAULT_EXPIRY = timedelta(days=365)
_SERIALIZER = JSONSerializer(compact=False)


@dataclass(frozen=True)
class Expiries:
    """How long newly signed metadata stays valid: the timestamp, and root/targets/snapshot."""

    timestamp: timedelta = DEFAULT_TIMESTAMP_EXPIRY
    other: timedelta = DEFAULT_EXPIRY


def parse_expiry(text: str, option: str) -> timedelta:
    """A Go-style duration (`168h`, `30s`) as a timedelta. Raises `usage`."""
    from pkgmgr.manifest.durations import parse_go_duration

    try:
        seconds = parse_go_duration(text)
    except ValueError as exc:
        raise PkgmgrError(f"{option}: {exc}", code=Code.USAGE) from None
    if seconds <= 0:
        raise PkgmgrError(f"{option}: {text!r} must be a positive duration", code=Code.USAGE)
    return timedelta(seconds=seconds)


def is_signed(index: Path) -> bool:
    return (Path(index) / METADATA_DIR / "1.root.json").is_file()


def keys_dir(index: Path, name: str, keys: str | Path | None) -> Path:
    """`--keys DIR`, else `PKGMGR_SIGNING_KEYS`, else `<index>/../<name>-keys/`. Never inside
    the index (`usage`)."""
    from pkgmgr.fsutil import user_path

    env = os.environ.get("PKGMGR_SIGNING_KEYS", "").strip()
    chosen = user_path(str(keys)) if keys else user_path(env) if env else Path(index).absolute().parent / f"{name}-keys"
    chosen = chosen.absolute()
    if chosen.resolve().is_relative_to(Path(index).resolve()):
        raise PkgmgrError(f"the signing keys directory {chosen} is inside the registry index; keys must never be "
                          "published with it", code=Code.USAGE, hint="choose a directory outside the index with --keys")
    return chosen


class KeyStore:
    """`<role>.key` / `<role>.pub` files in one directory."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path(self, role: str) -> Path:
        return self.folder / f"{role}.key"

    def has(self, role: str) -> bool:
        return self.path(role).is_file()

    def signer(self, role: str) -> CryptoSigner:
        """The role's signer. Raises `not_found` (no key file) and `invalid_config` (not a key)."""
        path = self.path(role)
        try:
            pem = path.read_bytes()
        except FileNotFoundError:
            raise PkgmgrError(f"no {role} signing key: {path} does not exist", code=Code.NOT_FOUND,
                              hint="pass the keys directory with --keys DIR or PKGMGR_SIGNING_KEYS") from None
        except OSError as exc:
            raise PkgmgrError(f"{path}: cannot read: {exc.strerror}", code=Code.INTERNAL) from None
        try:
            return CryptoSigner(load_pem_private_key(pem, None))
        except (ValueError, TypeError) as exc:
            raise PkgmgrError(f"{path}: not an unencrypted PKCS#8 PEM private key ({exc})",
                              code=Code.INVALID_CONFIG) from None

    def generate(self, role: str) -> CryptoSigner:
        """A new Ed25519 key for `role`, written with mode 0600 (replacing an older one)."""
        signer = CryptoSigner.generate_ed25519()
        self.write(role, signer)
        return signer

    def write(self, role: str, signer: CryptoSigner) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write_bytes(self.path(role), signer.private_bytes, mode=0o600)
        public = signer.public_key._crypto_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
        atomic_write_bytes(self.folder / f"{role}.pub", public, mode=0o644)


def _now(now: datetime | None) -> datetime:
    return (now or datetime.now(UTC)).replace(microsecond=0)


def _write(index: Path, name: str, metadata: Metadata[Any]) -> bytes:
    data = metadata.to_bytes(_SERIALIZER)
    atomic_write_bytes(Path(index) / METADATA_DIR / name, data)
    return data


def _load(index: Path, name: str) -> Metadata[Any]:
    path = Path(index) / METADATA_DIR / name
    try:
        return Metadata.from_bytes(path.read_bytes())
    except FileNotFoundError:
        raise PkgmgrError(f"{path} does not exist: the index is not signed", code=Code.NOT_FOUND,
                          hint="sign it first: 'pkgmgr registry init DIR --sign' creates the metadata") from None
    except Exception as exc:  # noqa: BLE001 - a broken metadata file, whatever the reason
        raise PkgmgrError(f"{path}: not TUF metadata ({exc})", code=Code.INVALID_INDEX) from None


def target_files(index: Path) -> list[str]:
    """The TUF targets of an index (module docstring), sorted."""
    index = Path(index)
    found = [rel for rel in (REGISTRY_FILE, INDEX_FILE) if (index / rel).is_file()]
    for folder, suffix in (("extensions", ".toml"), ("index", ".json"), ("archives", "")):
        base = index / folder
        if base.is_dir():
            found += [p.relative_to(index).as_posix() for p in base.rglob("*")
                      if p.is_file() and not p.is_symlink() and p.name.endswith(suffix) and p.name != ".gitkeep"]
    return sorted(found)


@dataclass(frozen=True)
class SignResult:
    index: Path
    keys: Path
    versions: dict[str, int]
    root_sha256: str
    expires: dict[str, str]
    targets: int
    generated: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"index": str(self.index), "keys": str(self.keys), "versions": self.versions,
                "root_sha256": self.root_sha256, "expires": self.expires, "targets": self.targets,
                "generated_keys": list(self.generated)}


def init_signing(index: Path, keys: Path, *, expiries: Expiries = Expiries(), now: datetime | None = None) -> SignResult:
    """Create root (version 1) and the other roles for `index`, one Ed25519 key per role: the
    keys already in `keys` are used, missing ones generated."""
    store = KeyStore(keys)
    generated = []
    signers = {}
    for role in ROLES:
        if store.has(role):
            signers[role] = store.signer(role)
        else:
            signers[role] = store.generate(role)
            generated.append(role)
    root = Metadata(Root(expires=_now(now) + expiries.other, consistent_snapshot=False))
    for role in ROLES:
        root.signed.add_key(signers[role].public_key, role)
    root.sign(signers["root"])
    (Path(index) / METADATA_DIR).mkdir(parents=True, exist_ok=True)
    _write(index, "1.root.json", root)
    _write(index, "root.json", root)
    result = sign_index(index, keys, expiries=expiries, now=now)
    return SignResult(result.index, result.keys, result.versions, result.root_sha256, result.expires,
                      result.targets, tuple(generated))


def _current_root(index: Path) -> tuple[Metadata[Root], int]:
    folder = Path(index) / METADATA_DIR
    version = 1
    while (folder / f"{version + 1}.root.json").is_file():
        version += 1
    return _load(index, f"{version}.root.json"), version


def sign_index(index: Path, keys: Path, *, expiries: Expiries = Expiries(), now: datetime | None = None,
               timestamp_only: bool = False, resign_root: bool = False) -> SignResult:
    """Re-sign `index`: targets (from the files as they are now), snapshot and timestamp, each
    one version up (only the timestamp with `timestamp_only`, which needs only its key). With
    `resign_root`, first a new root version with the same keys and a new expiry."""
    import hashlib

    index = Path(index)
    store = KeyStore(keys)
    now = _now(now)
    root, version = _current_root(index)
    if resign_root:
        signer = _signer(store, root, "root")
        root.signed.version = version + 1
        root.signed.expires = now + expiries.other
        root.sign(signer)
        _write(index, f"{version + 1}.root.json", root)
        _write(index, "root.json", root)
    folder = index / METADATA_DIR
    count = 0
    if not timestamp_only:
        previous = _load(index, "targets.json") if (folder / "targets.json").is_file() else None
        targets = Metadata(Targets(version=(previous.signed.version + 1) if previous else 1,
                                   expires=now + expiries.other))
        for rel in target_files(index):
            targets.signed.targets[rel] = TargetFile.from_file(rel, str(index / rel), ["sha256"])
        count = len(targets.signed.targets)
        targets.sign(_signer(store, root, "targets"))
        targets_bytes = _write(index, "targets.json", targets)
        previous_snapshot = _load(index, "snapshot.json") if (folder / "snapshot.json").is_file() else None
        snapshot = Metadata(Snapshot(version=(previous_snapshot.signed.version + 1) if previous_snapshot else 1,
                                     expires=now + expiries.other,
                                     meta={"targets.json": _meta(targets.signed.version, targets_bytes)}))
        snapshot.sign(_signer(store, root, "snapshot"))
        snapshot_bytes = _write(index, "snapshot.json", snapshot)
    else:
        snapshot = _load(index, "snapshot.json")
        snapshot_bytes = (folder / "snapshot.json").read_bytes()
        count = len(_load(index, "targets.json").signed.targets)
    previous_timestamp = _load(index, "timestamp.json") if (folder / "timestamp.json").is_file() else None
    timestamp = Metadata(Timestamp(version=(previous_timestamp.signed.version + 1) if previous_timestamp else 1,
                                   expires=now + expiries.timestamp,
                                   snapshot_meta=_meta(snapshot.signed.version, snapshot_bytes)))
    timestamp.sign(_signer(store, root, "timestamp"))
    _write(index, "timestamp.json", timestamp)
    targets_md = _load(index, "targets.json")
    root_bytes = (folder / "root.json").read_bytes()
    versions = {"root": root.signed.version, "targets": targets_md.signed.version,
                "snapshot": snapshot.signed.version, "timestamp": timestamp.signed.version}
    expires = {"root": _iso(root.signed.expires), "targets": _iso(targets_md.signed.expires),
               "snapshot": _iso(snapshot.signed.expires), "timestamp": _iso(timestamp.signed.expires)}
    return SignResult(index, Path(keys), versions, hashlib.sha256(root_bytes).hexdigest(), expires, count)


def _iso(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(version: int, data: bytes) -> MetaFile:
    import hashlib

    return MetaFile(version=version, length=len(data), hashes={"sha256": hashlib.sha256(data).hexdigest()})


def _signer(store: KeyStore, root: Metadata[Root], role: str) -> CryptoSigner:
    """The role's key, which must be one the current root names for it."""
    signer = store.signer(role)
    if signer.public_key.keyid not in root.signed.roles[role].keyids:
        raise PkgmgrError(f"{store.path(role)} is not a {role} key of this index's current root",
                          code=Code.REGISTRY_SIGNATURE_INVALID,
                          hint="use the keys directory the index was signed with (--keys DIR)")
    return signer


def check_keys(index: Path, store: KeyStore, roles: Iterable[str] = ("targets", "snapshot", "timestamp")) -> None:
    """Raise (`not_found`, `registry_signature_invalid`) unless `store` holds the current root's
    keys of `roles`: checked before an index is changed, so the change can be signed."""
    root, _ = _current_root(index)
    for role in roles:
        _signer(store, root, role)


def rotate_key(index: Path, keys: Path, role: str, *, expiries: Expiries = Expiries(),
               now: datetime | None = None) -> SignResult:
    """Replace `role`'s key: a new root version that names the new key, signed by the old root
    key (and, when `role` is root, by the new one too, as TUF requires), then every other role
    re-signed at once so the index is valid right after it."""
    if role not in ROLES:
        raise PkgmgrError(f"{role!r} is not a TUF role ({', '.join(ROLES)})", code=Code.USAGE)
    store = KeyStore(keys)
    root, version = _current_root(index)
    old_root_signer = _signer(store, root, "root")
    old = store.signer(role)
    new = CryptoSigner.generate_ed25519()
    root.signed.revoke_key(old.public_key.keyid, role)
    root.signed.add_key(new.public_key, role)
    root.signed.version = version + 1
    root.signed.expires = _now(now) + expiries.other
    root.sign(old_root_signer)
    if role == "root":
        root.sign(new, append=True)
    _write(index, f"{version + 1}.root.json", root)
    _write(index, "root.json", root)
    store.write(role, new)
    return sign_index(index, keys, expiries=expiries, now=now)


def signature_problems(index: Path) -> Iterable[tuple[str, str]]:
    """(file, message) for every signature problem of `index`: its metadata verified from
    `1.root.json` by ngclient itself (as a client that pinned that root would), then every
    target file against its signed length and hashes, and every index file signed."""
    import tempfile

    from tuf.ngclient import Updater

    from pkgmgr.registry.signed import CONFIG, NetFetcher

    index = Path(index).absolute()
    folder = index / METADATA_DIR
    try:
        bootstrap = (folder / "1.root.json").read_bytes()
    except OSError as exc:
        yield f"{METADATA_DIR}/1.root.json", f"cannot be read: {exc.strerror}"
        return
    base = index.as_uri() + "/"
    with tempfile.TemporaryDirectory(prefix="pkgmgr-verify-") as tmp:
        fetcher = NetFetcher(None, None, base, directory=index, insecure=False, immutable=False)  # type: ignore[arg-type]
        try:
            updater = Updater(tmp, base + METADATA_DIR + "/", fetcher=fetcher, config=CONFIG, bootstrap=bootstrap)
            updater.refresh()
        except Exception as exc:  # noqa: BLE001 - every failure is a problem to list
            yield METADATA_DIR, f"does not verify: {type(exc).__name__}: {exc}"
            return
        signed = set()
        for rel in target_files(index):
            info = updater.get_targetinfo(rel)
            if info is None:
                yield rel, "is not signed (not a target of metadata/targets.json): run 'pkgmgr registry sign'"
                continue
            signed.add(rel)
            try:
                with open(index / rel, "rb") as handle:
                    info.verify_length_and_hashes(handle)
            except Exception as exc:  # noqa: BLE001
                yield rel, f"is not the file metadata/targets.json signs ({exc}): run 'pkgmgr registry sign'"
        trusted = Metadata.from_file(os.path.join(tmp, "targets.json")).signed.targets  # as ngclient stored it
        for rel in sorted(set(trusted) - signed):
            yield rel, "is signed in metadata/targets.json but missing from the index"
