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
from collections.abc import Iterable, Sequence
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
    Delegations,
    Metadata,
    MetaFile,
    Root,
    Snapshot,
    SuccinctRoles,
    TargetFile,
    Targets,
    Timestamp,
)
from tuf.api.serialization.json import JSONSerializer

from pkgmgr.errors import Code, PkgmgrError, io_error
from pkgmgr.fsutil import atomic_write_bytes
from pkgmgr.registry.index_format import INDEX_FILE, REGISTRY_FILE
from pkgmgr.registry.switch import FileChange
from pkgmgr.registry.trustroot import METADATA_DIR

ROLES = ("root", "targets", "snapshot", "timestamp")  # the top-level roles: root names their keys
BINS_ROLE = "bins"  # the hashed bins' role (PEP 458, TAP 15): targets delegate to its key
KEY_ROLES = (*ROLES, BINS_ROLE)
TARGETS_PER_BIN = 256
MIN_BIN_BITS, MAX_BIN_BITS = 4, 14
DEFAULT_TIMESTAMP_EXPIRY = timedelta(days=7)
DEFAULT_EXPIRY = timedelta(days=365)
_SERIALIZER = JSONSerializer(compact=False)
_COMPACT = JSONSerializer(compact=True)  # bins and the snapshot: one line per bin adds up


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
        return self.load(self.path(role), role)

    def load(self, path: Path, role: str = "") -> CryptoSigner:
        role = role or path.name.split(".", 1)[0]
        try:
            pem = path.read_bytes()
        except FileNotFoundError:
            raise PkgmgrError(f"no {role} signing key: {path} does not exist", code=Code.NOT_FOUND,
                              hint="pass the keys directory with --keys DIR or PKGMGR_SIGNING_KEYS") from None
        except OSError as exc:  # permission denied, a failing disk: io_error; a directory there: not a key
            raise io_error(exc, path) or PkgmgrError(f"{path}: cannot read the {role} signing key: "
                                                     f"{exc.strerror or exc}", code=Code.INVALID_CONFIG,
                                                     hint="pass the keys directory with --keys DIR or "
                                                          "PKGMGR_SIGNING_KEYS") from None
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


METADATA_MAX_BYTES = 64 * 1024 * 1024  # a metadata file of an index being signed, read back (4x ngclient's targets cap)


def _load(index: Path, name: str) -> Metadata[Any]:
    path = Path(index) / METADATA_DIR / name
    data = _read_metadata(index, name)
    try:
        return Metadata.from_bytes(data)
    except Exception as exc:  # noqa: BLE001 - a broken metadata file, whatever the reason
        raise PkgmgrError(f"{path}: not TUF metadata ({exc})", code=Code.INVALID_INDEX) from None


def _read_metadata(index: Path, name: str) -> bytes:
    """The bytes of the index's metadata file `name`. Raises `not_found` when it is not there (the
    index is not signed, or it went since it was listed), `io_error` when the disk refuses it
    (permission denied, a failing device) and `invalid_index` for anything else that stops the
    read, a FIFO or device in its place and one over `METADATA_MAX_BYTES` included (SPEC 11: never
    `internal`)."""
    from pkgmgr.fsutil import read_regular

    path = Path(index) / METADATA_DIR / name
    try:
        data = read_regular(path, limit=METADATA_MAX_BYTES, follow_symlinks=True)
    except FileNotFoundError:
        raise PkgmgrError(f"{path} does not exist: the index is not signed", code=Code.NOT_FOUND,
                          hint="an index is signed from its start: 'pkgmgr registry init DIR --sign' creates one in an "
                               "empty DIR, to publish the archives into") from None
    except OSError as exc:
        raise io_error(exc, path) or PkgmgrError(f"{path}: cannot be read: {exc.strerror or exc}",
                                                 code=Code.INVALID_INDEX) from None
    if len(data) > METADATA_MAX_BYTES:
        raise PkgmgrError(f"{path}: larger than {METADATA_MAX_BYTES // (1024 * 1024)} MiB (pkgmgr's bound on a "
                          "metadata file it signs)", code=Code.INVALID_INDEX)
    return data


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
    targets: int  # targets signed by this signing (-1: not counted, only the changed ones were)
    generated: tuple[str, ...] = field(default=())
    bins: dict[str, int] | None = None  # {"bins": how many, "resigned": how many this time}

    def to_json(self) -> dict[str, Any]:
        return {"index": str(self.index), "keys": str(self.keys), "versions": self.versions,
                "root_sha256": self.root_sha256, "expires": self.expires, "targets": self.targets,
                "generated_keys": list(self.generated), "bins": self.bins}


def init_signing(index: Path, keys: Path, *, expiries: Expiries = Expiries(), now: datetime | None = None) -> SignResult:
    """Create root (version 1) and the other roles for `index`, one Ed25519 key per role (and
    the `bins` key of the hashed bins): the keys already in `keys` are used, missing ones
    generated. The metadata goes in through the index's switch."""
    from pkgmgr.registry.switch import switch

    store = KeyStore(keys)
    generated = []
    signers = {}
    for role in KEY_ROLES:
        if store.has(role):
            signers[role] = store.signer(role)
        else:
            signers[role] = store.generate(role)
            generated.append(role)
    root = Metadata(Root(expires=_now(now) + expiries.other, consistent_snapshot=False))
    for role in ROLES:
        root.signed.add_key(signers[role].public_key, role)
    root.sign(signers["root"])
    data = root.to_bytes(_SERIALIZER)
    changes = [FileChange(f"{METADATA_DIR}/1.root.json", data), FileChange(f"{METADATA_DIR}/root.json", data)]
    metadata = MetadataSet(index, store, expiries, now, root=(root, 1))
    metadata.rebuild(_target_data(index))
    switch(Path(index), changes + metadata.changes())
    result = metadata.result(keys)
    return SignResult(result.index, result.keys, result.versions, result.root_sha256, result.expires,
                      result.targets, tuple(generated), result.bins)


def _current_root(index: Path) -> tuple[Metadata[Root], int]:
    folder = Path(index) / METADATA_DIR
    version = 1
    while (folder / f"{version + 1}.root.json").is_file():
        version += 1
    return _load(index, f"{version}.root.json"), version


def _target_data(index: Path) -> dict[str, Path]:
    index = Path(index)
    return {rel: index / rel for rel in target_files(index)}


def is_target(rel: str) -> bool:
    """Whether a path of the index is a TUF target (module docstring)."""
    if rel in (REGISTRY_FILE, INDEX_FILE):
        return True
    top, _, rest = rel.partition("/")
    name = rel.rsplit("/", 1)[-1]
    if not rest or name == ".gitkeep":
        return False
    return ((top == "extensions" and rel.endswith(".toml")) or (top == "index" and rel.endswith(".json"))
            or top == "archives")


def bit_length_for(count: int) -> int:
    """Hashed bins for `count` targets: about TARGETS_PER_BIN in each, 2^4 … 2^14 bins."""
    needed = max(1, -(-count // TARGETS_PER_BIN))
    return min(MAX_BIN_BITS, max(MIN_BIN_BITS, (needed - 1).bit_length()))


class MetadataSet:
    """The signed metadata of an index, loaded, edited and signed in memory; `changes()` gives
    the files to switch in, in the order clients may see them: root, bins, targets, snapshot,
    timestamp last (registry/switch.py). TUF's own metadata API does every signing."""

    def __init__(self, index: Path, store: KeyStore, expiries: Expiries, now: datetime | None, *,
                 root: tuple[Metadata[Root], int] | None = None) -> None:
        self.index = Path(index)
        self.store = store
        self.expiries = expiries
        self.now = _now(now)
        self.root, self.root_version = root if root is not None else _current_root(self.index)
        folder = self.index / METADATA_DIR
        self.targets: Metadata[Targets] | None = _load(self.index, "targets.json") if (folder / "targets.json").is_file() else None
        self.snapshot: Metadata[Snapshot] | None = (_load(self.index, "snapshot.json")
                                                   if (folder / "snapshot.json").is_file() else None)
        self.timestamp: Metadata[Timestamp] | None = (_load(self.index, "timestamp.json")
                                                     if (folder / "timestamp.json").is_file() else None)
        self._out: dict[str, bytes] = {}  # metadata file name -> bytes, in switch order
        self._bins: dict[str, Metadata[Targets]] = {}
        self._root_files: list[tuple[str, bytes]] = []
        self.count = 0
        self.generated: tuple[str, ...] = ()

    # -- the hashed bins ---------------------------------------------------------------------

    @property
    def succinct(self) -> SuccinctRoles | None:
        delegations = self.targets.signed.delegations if self.targets is not None else None
        return delegations.succinct_roles if delegations is not None else None

    @property
    def binned(self) -> bool:
        return self.succinct is not None

    def _bin(self, name: str) -> Metadata[Targets]:
        if name not in self._bins:
            path = self.index / METADATA_DIR / f"{name}.json"
            self._bins[name] = _load(self.index, f"{name}.json") if path.is_file() else _unsigned_targets(self.now)
        return self._bins[name]

    def _bins_signer(self) -> CryptoSigner:
        signer = self.store.signer(BINS_ROLE)
        succinct = self.succinct
        if succinct is None or signer.public_key.keyid not in succinct.keyids:
            raise PkgmgrError(f"{self.store.path(BINS_ROLE)} is not the key this index's targets delegate its hashed "
                              "bins to", code=Code.REGISTRY_SIGNATURE_INVALID,
                              hint="use the keys directory the index was signed with (--keys DIR)")
        return signer

    def _sign_bin(self, name: str, md: Metadata[Targets], signer: CryptoSigner) -> None:
        md.signed.version += 1
        md.signed.expires = self.now + self.expiries.other
        md.signatures.clear()
        md.sign(signer)
        self._out[f"{name}.json"] = md.to_bytes(_COMPACT)

    def update(self, changed: dict[str, bytes | None]) -> None:
        """Re-sign the bins of the changed target files (data None: removed), then targets,
        snapshot and timestamp. An index not yet in hashed bins is rebuilt whole instead."""
        if not self.binned:  # signed before hashed bins: this change migrates it
            files: dict[str, Path | bytes] = dict(_target_data(self.index))
            for rel, data in changed.items():
                if data is None:
                    files.pop(rel, None)
                else:
                    files[rel] = data
            self.rebuild(files)
            return
        succinct = self.succinct
        assert succinct is not None
        signer = self._bins_signer()
        touched: dict[str, Metadata[Targets]] = {}
        for rel, data in sorted(changed.items()):
            name = succinct.get_role_for_target(rel)
            md = touched.setdefault(name, self._bin(name))
            if data is None:
                md.signed.targets.pop(rel, None)
            else:
                md.signed.targets[rel] = TargetFile.from_data(rel, data, ["sha256"])
        for name, md in sorted(touched.items()):
            self._sign_bin(name, md, signer)
        self.count = -1  # not counted: a publish reads no other bin
        self._finish()

    def rebuild(self, files: dict[str, Path] | dict[str, Path | bytes]) -> None:
        """Every target signed again from `files` (rel -> its path or bytes) into hashed bins —
        the migration of an index whose targets.json lists every target — then targets,
        snapshot and timestamp. The number of bins only grows (a client refuses a snapshot that
        drops a role it saw)."""
        bits = bit_length_for(len(files))
        succinct = self.succinct
        if succinct is not None:
            bits = max(bits, succinct.bit_length)
        if succinct is None and not self.store.has(BINS_ROLE):  # the migration: a key for the bins
            self.store.generate(BINS_ROLE)
            self.generated = (BINS_ROLE,)  # (once in bins, a missing bins.key is an error, never a new key)
        bins_key = self.store.signer(BINS_ROLE).public_key
        if self.targets is None:
            self.targets = _unsigned_targets(self.now)
        targets = self.targets.signed
        reset = succinct is None or succinct.bit_length != bits or bins_key.keyid not in succinct.keyids
        if reset:  # new bins, or a new bins key: every bin signed again
            targets.targets = {}
            targets.delegations = Delegations({bins_key.keyid: bins_key}, roles=None,
                                              succinct_roles=SuccinctRoles([bins_key.keyid], 1, bits, BINS_ROLE))
        succinct = self.succinct
        assert succinct is not None
        signer = self._bins_signer()
        wanted: dict[str, dict[str, TargetFile]] = {name: {} for name in succinct.get_roles()}
        for rel, source in sorted(files.items()):
            info = (TargetFile.from_data(rel, source, ["sha256"]) if isinstance(source, bytes)
                    else TargetFile.from_file(rel, str(source), ["sha256"]))
            wanted[succinct.get_role_for_target(rel)][rel] = info
        for name, infos in wanted.items():
            md = self._bin(name)
            listed = self.snapshot.signed.meta.get(f"{name}.json") if self.snapshot is not None else None
            if not reset and md.signed.targets == infos and listed is not None and listed.version == md.signed.version:
                continue
            md.signed.targets = infos
            self._sign_bin(name, md, signer)
        self.count = len(files)
        self._finish()

    # -- targets, snapshot, timestamp --------------------------------------------------------

    def _finish(self) -> None:
        """targets.json (re-signed at every change: its version moves with the snapshot's, a few
        hundred bytes), the snapshot naming it and every bin, the timestamp naming the snapshot."""
        assert self.targets is not None
        self.targets.signed.version += 1
        self.targets.signed.expires = self.now + self.expiries.other
        self.targets.signatures.clear()
        self.targets.sign(_signer(self.store, self.root, "targets"))
        targets_bytes = self.targets.to_bytes(_SERIALIZER)
        self._out["targets.json"] = targets_bytes
        previous = self.snapshot
        meta = dict(previous.signed.meta) if previous is not None else {}
        meta["targets.json"] = _meta(self.targets.signed.version, targets_bytes)
        succinct = self.succinct
        if succinct is not None:
            for name in succinct.get_roles():
                md = self._bin(name)
                if md.signed.version == 0:  # a bin never signed yet: signed empty, so every bin is listed
                    self._sign_bin(name, md, self._bins_signer())
                meta[f"{name}.json"] = MetaFile(version=md.signed.version)
        self.snapshot = Metadata(Snapshot(version=(previous.signed.version + 1) if previous else 1,
                                          expires=self.now + self.expiries.other, meta=meta))
        self.snapshot.sign(_signer(self.store, self.root, "snapshot"))
        self._out["snapshot.json"] = self.snapshot.to_bytes(_COMPACT)
        self.resign_timestamp()

    def resign_timestamp(self) -> None:
        assert self.snapshot is not None
        snapshot_bytes = self._out.get("snapshot.json") or _read_metadata(self.index, "snapshot.json")
        previous = self.timestamp
        self.timestamp = Metadata(Timestamp(version=(previous.signed.version + 1) if previous else 1,
                                            expires=self.now + self.expiries.timestamp,
                                            snapshot_meta=_meta(self.snapshot.signed.version, snapshot_bytes)))
        self.timestamp.sign(_signer(self.store, self.root, "timestamp"))
        self._out["timestamp.json"] = self.timestamp.to_bytes(_SERIALIZER)

    def new_root(self, root: Metadata[Root], version: int) -> None:
        """A new root version (already signed) goes in first."""
        self.root, self.root_version = root, version
        data = root.to_bytes(_SERIALIZER)
        self._root_files = [(f"{version}.root.json", data), ("root.json", data)]

    def changes(self) -> list[FileChange]:
        order = sorted(self._out, key=lambda name: (name in ("targets.json", "snapshot.json", "timestamp.json"),
                                                    ("targets.json", "snapshot.json", "timestamp.json").index(name)
                                                    if name in ("targets.json", "snapshot.json", "timestamp.json")
                                                    else 0, name))
        return ([FileChange(f"{METADATA_DIR}/{name}", data) for name, data in self._root_files]
                + [FileChange(f"{METADATA_DIR}/{name}", self._out[name]) for name in order])

    def result(self, keys: Path) -> SignResult:
        import hashlib

        assert self.targets is not None and self.snapshot is not None and self.timestamp is not None
        root_bytes = self.root.to_bytes(_SERIALIZER) if self._root_files else None
        if root_bytes is None:
            root_bytes = _read_metadata(self.index, "root.json")
        versions = {"root": self.root.signed.version, "targets": self.targets.signed.version,
                    "snapshot": self.snapshot.signed.version, "timestamp": self.timestamp.signed.version}
        expires = {"root": _iso(self.root.signed.expires), "targets": _iso(self.targets.signed.expires),
                   "snapshot": _iso(self.snapshot.signed.expires), "timestamp": _iso(self.timestamp.signed.expires)}
        succinct = self.succinct
        bins = None if succinct is None else {"bins": 2 ** succinct.bit_length,
                                              "resigned": sum(1 for n in self._out if n.startswith(BINS_ROLE + "-"))}
        return SignResult(self.index, Path(keys), versions, hashlib.sha256(root_bytes).hexdigest(), expires,
                          self.count, self.generated, bins)


def _unsigned_targets(now: datetime) -> Metadata[Targets]:
    """New targets metadata at version 0 (as python-tuf's simple repository: signing raises it)."""
    md = Metadata(Targets(expires=now))
    md.signed.version = 0
    return md


@dataclass(frozen=True)
class Signing:
    """How a command that changes a signed index signs it: the keys directory and expiries."""

    keys: Path
    expiries: Expiries = Expiries()
    now: datetime | None = None

    def metadata(self, index: Path) -> MetadataSet:
        return MetadataSet(index, KeyStore(self.keys), self.expiries, self.now)


def signed_changes(index: Path, signing: Signing | None, changes: list[FileChange]) -> tuple[list[FileChange],
                                                                                            SignResult | None]:
    """`changes` followed by the signed metadata that covers them (the bins of the changed
    targets, targets, snapshot, timestamp) when `signing`; the result to report."""
    if signing is None:
        return changes, None
    metadata = signing.metadata(index)
    metadata.update({c.rel: c.data for c in changes if is_target(c.rel)})
    return changes + metadata.changes(), metadata.result(signing.keys)


def sign_with_writes(index: Path, signing: Signing, writes: list[tuple[str, bytes]],
                     removals: Sequence[str] = ()) -> SignResult:
    """`writes` and `removals`, and the whole index signed again as it will be after them (every
    target hashed into hashed bins: `registry build` of a signed index), in one switch."""
    from pkgmgr.registry.switch import switch

    index = Path(index)
    metadata = signing.metadata(index)
    files: dict[str, Path | bytes] = dict(_target_data(index))
    for rel in removals:
        files.pop(rel, None)
    for rel, data in writes:
        if is_target(rel):
            files[rel] = data
    metadata.rebuild(files)
    switch(index, [FileChange(rel, data) for rel, data in writes] + [FileChange(rel, None) for rel in removals]
           + metadata.changes())
    return metadata.result(signing.keys)


def sign_index(index: Path, keys: Path, *, expiries: Expiries = Expiries(), now: datetime | None = None,
               timestamp_only: bool = False, resign_root: bool = False) -> SignResult:
    """Re-sign `index` whole: every target from the files as they are now into hashed bins (an
    index signed the old way migrates), then targets, snapshot and timestamp, each one version
    up (only the timestamp with `timestamp_only`, which needs only its key). With
    `resign_root`, first a new root version with the same keys and a new expiry. Goes in
    through the index's switch."""
    from pkgmgr.registry.switch import switch

    index = Path(index)
    store = KeyStore(keys)
    metadata = MetadataSet(index, store, expiries, now)
    if resign_root:
        root, version = metadata.root, metadata.root_version
        signer = _signer(store, root, "root")
        root.signed.version = version + 1
        root.signed.expires = metadata.now + expiries.other
        root.signatures.clear()
        root.sign(signer)
        metadata.new_root(root, version + 1)
    if timestamp_only:
        metadata.resign_timestamp()
        metadata.count = -1
    else:
        metadata.rebuild(_target_data(index))
    switch(index, metadata.changes())
    return metadata.result(keys)


def _iso(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(version: int, data: bytes) -> MetaFile:
    import hashlib

    return MetaFile(version=version, length=len(data), hashes={"sha256": hashlib.sha256(data).hexdigest()})


def _signer(store: KeyStore, root: Metadata[Root], role: str, *, allow_old: bool = False) -> CryptoSigner:
    """The role's key, which must be one the current root names for it (`allow_old`: or the
    `<role>.key.old` a rotation killed before its switch left beside a key no root names yet)."""
    signer = store.signer(role)
    keyids = root.signed.roles[role].keyids
    if signer.public_key.keyid in keyids:
        return signer
    old = store.path(role).with_name(f"{role}.key.old")
    if allow_old and old.is_file():
        previous = KeyStore(store.folder).load(old)
        if previous.public_key.keyid in keyids:
            return previous
    raise PkgmgrError(f"{store.path(role)} is not a {role} key of this index's current root",
                      code=Code.REGISTRY_SIGNATURE_INVALID,
                      hint=f"use the keys directory the index was signed with (--keys DIR); after an interrupted "
                           f"'registry rotate-key', run it again (or put {old.name} back as {role}.key)")


def check_keys(index: Path, store: KeyStore, roles: Iterable[str] = ("targets", "snapshot", "timestamp")) -> None:
    """Raise (`not_found`, `registry_signature_invalid`) unless `store` holds the current root's
    keys of `roles` (and the bins key its targets delegate to, once in hashed bins): checked
    before an index is changed, so the change can be signed."""
    root, _ = _current_root(index)
    for role in roles:
        _signer(store, root, role)
    folder = Path(index) / METADATA_DIR
    if (folder / "targets.json").is_file():
        targets = _load(index, "targets.json")
        delegations = targets.signed.delegations
        if delegations is not None and delegations.succinct_roles is not None:
            signer = store.signer(BINS_ROLE)
            if signer.public_key.keyid not in delegations.succinct_roles.keyids:
                raise PkgmgrError(f"{store.path(BINS_ROLE)} is not the key this index's targets delegate its hashed "
                                  "bins to", code=Code.REGISTRY_SIGNATURE_INVALID,
                                  hint="use the keys directory the index was signed with (--keys DIR)")


def rotate_key(index: Path, keys: Path, role: str, *, expiries: Expiries = Expiries(),
               now: datetime | None = None) -> SignResult:
    """Replace `role`'s key. A top-level role: a new root version that names the new key, signed
    by the old root key (and, when `role` is root, by the new one too, as TUF requires). The
    `bins` role: targets delegate to the new key and every bin is signed with it. Then targets,
    snapshot and timestamp are re-signed at once so the index is valid right after it; all of
    it goes in through the index's switch (the new key file is written first: until the switch,
    the old metadata still names the old key, which stays in `<role>.key.old`)."""
    from pkgmgr.registry.switch import switch

    if role not in KEY_ROLES:
        raise PkgmgrError(f"{role!r} is not a TUF role ({', '.join(KEY_ROLES)})", code=Code.USAGE)
    index = Path(index)
    store = KeyStore(keys)
    metadata = MetadataSet(index, store, expiries, now)
    new = CryptoSigner.generate_ed25519()
    if role == BINS_ROLE:
        if not metadata.binned:
            metadata.rebuild(_target_data(index))
            metadata = MetadataSet(index, store, expiries, now)
            metadata._out.clear()
        succinct = metadata.succinct
        _replace_key_file(store, role, new, keep_old=succinct is not None and _names(store, role, succinct.keyids))
        metadata.rebuild(_target_data(index))  # targets delegate to the new key; every bin re-signed
    else:
        root, version = metadata.root, metadata.root_version
        old_root_signer = _signer(store, root, "root", allow_old=True)
        recorded = _names(store, role, root.signed.roles[role].keyids)
        for keyid in list(root.signed.roles[role].keyids):  # whatever key the current root names
            root.signed.revoke_key(keyid, role)
        root.signed.add_key(new.public_key, role)
        root.signed.version = version + 1
        root.signed.expires = metadata.now + expiries.other
        root.signatures.clear()
        root.sign(old_root_signer)
        if role == "root":
            root.sign(new, append=True)
        metadata.new_root(root, version + 1)
        _replace_key_file(store, role, new, keep_old=recorded)
        metadata.count = -1
        if metadata.binned:
            metadata._finish()
        else:
            metadata.rebuild(_target_data(index))
    switch(index, metadata.changes())
    return metadata.result(keys)


def _names(store: KeyStore, role: str, keyids: Iterable[str]) -> bool:
    """Whether `<role>.key` is one of `keyids` (the key the index's metadata names now)."""
    try:
        return store.has(role) and store.signer(role).public_key.keyid in set(keyids)
    except PkgmgrError:
        return False


def _replace_key_file(store: KeyStore, role: str, new: CryptoSigner, *, keep_old: bool) -> None:
    """The new key in `<role>.key`; the one the metadata names now kept as `<role>.key.old` (a
    rotation killed before its switch leaves metadata that still names it). A key no metadata
    names (such a killed rotation's own) is not kept over it."""
    old = store.path(role)
    if keep_old and old.is_file():
        atomic_write_bytes(old.with_name(old.name + ".old"), old.read_bytes(), mode=0o600)
    store.write(role, new)


def signature_problems(index: Path) -> Iterable[tuple[str, str]]:
    """(file, message) for every signature problem of `index`: its metadata verified from
    `1.root.json` by ngclient itself (as a client that pinned that root would), then every
    target file against its signed length and hashes, and every index file signed."""
    import tempfile

    from tuf.ngclient import Updater

    from pkgmgr.fsutil import open_regular_fd
    from pkgmgr.registry.signed import CONFIG, NetFetcher
    from pkgmgr.registry.trustroot import read_trusted

    index = Path(index).absolute()
    folder = index / METADATA_DIR
    try:
        bootstrap = read_trusted(folder, "1.root.json")  # bounded; a FIFO refused, never waited on
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
            try:
                info = updater.get_targetinfo(rel)
            except Exception as exc:  # noqa: BLE001 - a bin that does not verify
                yield rel, f"its signed metadata does not verify: {type(exc).__name__}: {exc}"
                continue
            if info is None:
                yield rel, f"is not signed (not a target of the signed metadata): run 'pkgmgr registry sign {index}'"
                continue
            signed.add(rel)
            try:
                with os.fdopen(open_regular_fd(index / rel), "rb") as handle:  # a FIFO refused, never waited on
                    info.verify_length_and_hashes(handle)
            except Exception as exc:  # noqa: BLE001
                yield rel, f"is not the file the signed metadata names ({exc}): run 'pkgmgr registry sign {index}'"
        targets = Metadata[Targets].from_file(os.path.join(tmp, "targets.json"))  # as ngclient stored it
        trusted = set(targets.signed.targets)
        succinct = targets.signed.delegations.succinct_roles if targets.signed.delegations else None
        for name in succinct.get_roles() if succinct is not None else ():
            stored = os.path.join(tmp, f"{name}.json")  # the bins ngclient verified on the way
            try:
                if os.path.exists(stored):
                    trusted |= set(Metadata[Targets].from_file(stored).signed.targets)
                    continue
                md = Metadata[Targets].from_bytes(read_trusted(folder, f"{name}.json"))
                targets.verify_delegate(name, md)  # tuf's own check of a bin no target led to
            except Exception as exc:  # noqa: BLE001
                yield f"{METADATA_DIR}/{name}.json", f"does not verify: {type(exc).__name__}: {exc}"
                continue
            trusted |= set(md.signed.targets)
        for rel in sorted(trusted - signed):
            yield rel, "is signed in the index's metadata but missing from the index"
