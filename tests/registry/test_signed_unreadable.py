"""A signed registry's files, and the TUF metadata on either side, that cannot be read: each OS
error has its SPEC 11 code, never `internal` (exit 70). Written as python-tuf's attack tests are:
a signed local registry the client trusts, one file's read made to fail (`tests/support/faults.py`:
removed between listing and reading, a file where a directory was, permission denied, a name the
filesystem refuses), the code asserted, then that nothing moved.

- the registry's own files (`NetFetcher._read_file`): gone or under a file → a file it does not
  have (`registry_signature_invalid`, a signed registry's metadata is never optional); permission
  denied → `io_error`; anything else → `invalid_index` naming the file.
- the client's trusted metadata (`<home>/tuf/`), written by ngclient: permission denied →
  `io_error`; a file or directory gone in a race → `registry_signature_invalid`.
- the maintainer's side (`registry sign`): a key or metadata file it may not read → `io_error`;
  metadata gone since it was listed → `not_found`.
- `registry add --root FILE` that it may not read → `io_error`, nothing recorded."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from tests.publish.helpers import packed
from tests.registry.test_signed import Client, index  # noqa: F401 - fixtures
from tests.support.faults import deny_reading, os_error
from tests.support.signed import SignedIndex


@pytest.fixture
def local(home: Path, index: SignedIndex, tmp_path: Path) -> Client:  # noqa: F811
    """A client trusting the signed index as a local registry, which has published a new version
    since (new timestamp, snapshot and targets to read)."""
    client = Client(home, str(index.path))
    client.ok("registry", "add", "local", index.path, "--root", index.root_file)
    client.ok("ext", "info", "review-pack")
    index.publish(packed(tmp_path, version="0.2.0"))
    return client


READ_FAULTS = [(errno.ENOENT, "registry_signature_invalid", 4), (errno.ENOTDIR, "registry_signature_invalid", 4),
               (errno.EACCES, "io_error", 9), (errno.ENAMETOOLONG, "invalid_index", 3)]


@pytest.mark.parametrize("number, code, exit_code", READ_FAULTS, ids=[errno.errorcode[n] for n, _, _ in READ_FAULTS])
@pytest.mark.parametrize("rel", ["metadata/timestamp.json", "metadata/targets.json",
                                 "extensions/re/review-pack.toml"])
def test_a_registry_file_that_cannot_be_read_has_its_code(local: Client, index: SignedIndex,  # noqa: F811
                                                          monkeypatch: pytest.MonkeyPatch, rel: str, number: int,
                                                          code: str, exit_code: int) -> None:
    with monkeypatch.context() as patch:
        failed = deny_reading(patch, index.path / rel, number)
        # an entry file is read after the genuine metadata and registry.toml, which may be kept
        doc = local.refused(code, "ext", "install", "review-pack", exit_code=exit_code,
                            metadata_moves=rel.startswith("extensions/"))
    assert failed, f"{rel} was never read"
    assert "Traceback" not in doc["error"]["message"]
    if number == errno.EACCES:
        assert doc["error"]["details"]["path"] == str(index.path / rel)
    if code == "invalid_index":
        assert str(index.path / rel) in doc["error"]["message"]
    local.ok("ext", "install", "review-pack")  # the file readable again: the registry is whole


@pytest.mark.parametrize("number, code, exit_code", [(errno.EACCES, "io_error", 9),
                                                     (errno.ENOENT, "registry_signature_invalid", 4)])
def test_trusted_metadata_that_cannot_be_written_has_its_code(local: Client, home: Path,
                                                              monkeypatch: pytest.MonkeyPatch, number: int,
                                                              code: str, exit_code: int) -> None:
    """ngclient persists the new timestamp it accepted (`BoundedUpdater._persist_file`): the
    trusted metadata directory refusing it, or gone in between, is no bug."""
    from pkgmgr import fsutil

    real = fsutil.atomic_write_bytes
    tuf = str(home / "tuf")

    def failing(path: Path, data: bytes, **kwargs: object) -> None:
        if str(path).startswith(tuf) and Path(path).name == "timestamp.json":
            raise os_error(number, path)
        real(path, data, **kwargs)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(fsutil, "atomic_write_bytes", failing)
        local.refused(code, "ext", "install", "review-pack", exit_code=exit_code, metadata_moves=True)
    local.ok("ext", "install", "review-pack")


@pytest.mark.parametrize("file, number, code, exit_code", [
    ("keys/timestamp.key", errno.EACCES, "io_error", 9),
    ("index/metadata/snapshot.json", errno.EACCES, "io_error", 9),
    ("index/metadata/timestamp.json", errno.ENOENT, "not_found", 5),
])
def test_signing_with_a_file_that_cannot_be_read_has_its_code(index: SignedIndex, home: Path,  # noqa: F811
                                                              monkeypatch: pytest.MonkeyPatch, file: str,
                                                              number: int, code: str, exit_code: int) -> None:
    path = index.keys / Path(file).name if file.startswith("keys/") else index.path / file.partition("/")[2]
    client = Client(home, str(index.path))
    before = {p: p.read_bytes() for p in sorted(index.path.rglob("*")) if p.is_file()}
    with monkeypatch.context() as patch:
        failed = deny_reading(patch, path, number)
        result = client.run("registry", "sign", index.path, "--keys", index.keys)
    assert failed, f"{path} was never read"
    assert result.code == exit_code and result.json["error"]["code"] == code, result
    assert "Traceback" not in result.stderr
    assert {p: p.read_bytes() for p in sorted(index.path.rglob("*")) if p.is_file()} == before  # nothing moved


def test_a_root_file_that_cannot_be_read_is_io_error(home: Path, index: SignedIndex,  # noqa: F811
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    client = Client(home, str(index.path))
    with monkeypatch.context() as patch:
        deny_reading(patch, Path(index.root_file))
        doc = client.refused("io_error", "registry", "add", "local", index.path, "--root", index.root_file,
                             exit_code=9)
    assert doc["error"]["details"]["errno"] == "EACCES"
    assert [r["name"] for r in client.ok("registry", "list")["registries"]] == ["default"]  # nothing recorded
