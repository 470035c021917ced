"""`pkgmgr registry publish ARCHIVE --index DIR`: what it writes, what it refuses (and that a
refusal leaves the index exactly as it was)."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.registry.artifact import inspect_archive
from pkgmgr.registry.index_format import build_index, parse_entry
from pkgmgr.registry.publish import publish
from tests.publish.helpers import (
    LOCK_FILE,
    entry_text,
    fail,
    ok,
    pack,
    packed,
    set_entry_text,
    snapshot,
    variant,
)

MARKETING_DIGEST = "884e12e90219f5ea6d75d52448adb1378cb4e6c4c5758d74994bd4504ee178d4"


def entry(index: Path, name: str) -> dict:
    return tomllib.loads(entry_text(index, name))


def serial(index: Path) -> int:
    return tomllib.loads((index / "registry.toml").read_text("utf-8"))["registry"]["serial"]


def test_publish_writes_the_archive_metadata(tmp_path: Path, index: Path) -> None:
    source = variant(tmp_path / "src", "prompt-enhancer")
    archive = tmp_path / "prompt-enhancer-0.1.0.tar.gz"
    facts = pack(source, archive)
    before = datetime.now(UTC).replace(microsecond=0)
    doc = ok("registry", "publish", archive, "--index", index)
    assert doc["changed"] is True and doc["serial"] == 1 == serial(index)
    published = doc["published"]
    assert published["url"] == "archives/prompt-enhancer-0.1.0.tar.gz" == published["archive"]
    assert (index / published["url"]).read_bytes() == archive.read_bytes()
    data = entry(index, "prompt-enhancer")
    assert data["name"] == "prompt-enhancer"
    assert data["description"] == "Adds workspace context to assembled prompts"
    assert data["tier"] == "community" and "repository" not in data
    (version,) = data["versions"]
    assert {k: v for k, v in version.items() if k != "published"} == {
        "version": "0.1.0", "url": "archives/prompt-enhancer-0.1.0.tar.gz", "sha256": facts["sha256"],
        "size": facts["size"], "min_compozy_version": "0.5.0", "network_digest": "",
        "permissions": ["session.read"], "yanked": False,
    }
    assert version["published"].tzinfo is not None
    assert before <= version["published"] <= datetime.now(UTC) + timedelta(seconds=1)
    assert "published = 20" in entry_text(index, "prompt-enhancer") and "Z\n" in entry_text(index, "prompt-enhancer")
    assert (index / "index.json").read_bytes() == build_index(index)
    assert ok("registry", "validate", index, "--fetch")["valid"] is True


def test_publish_records_the_network_digest_and_tier(tmp_path: Path, index: Path) -> None:
    archive = packed(tmp_path, "marketing-linear")
    ok("registry", "publish", archive, "--index", index, "--tier", "official", "--published", "2026-01-02T03:04:05Z")
    (version,) = entry(index, "marketing-linear")["versions"]
    assert version["network_digest"] == MARKETING_DIGEST
    assert version["published"] == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert entry(index, "marketing-linear")["tier"] == "official"
    # the next publish keeps the entry's tier
    ok("registry", "publish", packed(tmp_path, "marketing-linear", version="0.2.0"), "--index", index)
    assert entry(index, "marketing-linear")["tier"] == "official"


def test_same_version_same_archive_is_a_no_op(tmp_path: Path, index: Path) -> None:
    archive = packed(tmp_path)
    ok("registry", "publish", archive, "--index", index)
    before = snapshot(index)
    doc = ok("registry", "publish", archive, "--index", index)
    assert doc["changed"] is False and doc["serial"] == 1
    assert snapshot(index) == before
    from tests.support.cli import run_cli

    result = run_cli(["registry", "publish", archive, "--index", index])
    assert result.code == 0 and "already published" in result.stdout and "nothing changed" in result.stdout


def test_no_op_republish_repairs_a_stale_index_json(tmp_path: Path, index: Path) -> None:
    archive = packed(tmp_path)
    ok("registry", "publish", archive, "--index", index)
    good = (index / "index.json").read_bytes()
    (index / "index.json").write_text('{"format": 1, "serial": 0, "extensions": []}\n')  # an interrupted publish
    assert ok("registry", "publish", archive, "--index", index)["repaired_index"] is True
    assert (index / "index.json").read_bytes() == good and serial(index) == 1


def test_same_version_other_archive_is_version_exists(tmp_path: Path, index: Path) -> None:
    ok("registry", "publish", packed(tmp_path), "--index", index)
    before = snapshot(index)
    other = packed(tmp_path, files={"NOTES.md": "changed after the release\n"})
    doc = fail("version_exists", "registry", "publish", other, "--index", index)
    assert doc["error"]["exit_code"] == 6
    assert doc["error"]["details"]["published_sha256"] != doc["error"]["details"]["sha256"]
    assert snapshot(index) == before


def test_pep440_equal_versions_are_the_same_version(tmp_path: Path, index: Path) -> None:
    ok("registry", "publish", packed(tmp_path, version="1.0.0-rc.1"), "--index", index)
    before = snapshot(index)
    doc = fail("version_exists", "registry", "publish", packed(tmp_path, version="1.0.0-rc1"), "--index", index)
    assert doc["error"]["details"]["version"] == "1.0.0-rc.1"
    assert snapshot(index) == before


def test_an_entry_named_otherwise_is_invalid_index(tmp_path: Path, index: Path) -> None:
    ok("registry", "publish", packed(tmp_path), "--index", index)
    set_entry_text(index, "review-pack", entry_text(index, "review-pack").replace(
        'name = "review-pack"', 'name = "review-tools"'))
    before = snapshot(index)
    doc = fail("invalid_index", "registry", "publish", packed(tmp_path, version="0.2.0"), "--index", index)
    problems = doc["error"]["details"]["problems"]
    assert problems[0]["file"] == "extensions/re/review-pack.toml" and problems[0]["key"] == "name"
    assert snapshot(index) == before


@pytest.mark.parametrize("case, code", [
    ("not-an-archive", "invalid_archive"),
    ("bad-manifest", "invalid_manifest"),
    ("bad-bundle", "invalid_bundle"),
    ("unsafe", "unsafe_archive"),
    ("no-manifest", "invalid_archive"),
    ("missing", "not_found"),
    ("fifo", "invalid_archive"),  # never opened (was exit 70)
])
def test_an_invalid_archive_is_refused(tmp_path: Path, index: Path, case: str, code: str) -> None:
    archive = tmp_path / f"{case}.tar.gz"
    if case == "not-an-archive":
        archive.write_text("hello")
    elif case == "bad-manifest":
        source = variant(tmp_path / "src", version="0.3.0")
        pack(source, archive)
        archive = _retar(archive, {"review-pack-0.3.0/extension.toml": b'name = "review-pack"\nversion = "1.0"\n'})
    elif case == "bad-bundle":
        source = variant(tmp_path / "src", "marketing-linear")
        pack(source, archive)
        archive = _retar(archive, {"marketing-linear-0.1.0/bundles/marketing.toml": b'name = "m"\n'})
    elif case == "unsafe":
        archive = _tar(archive, {"../evil.txt": b"x", "x/extension.toml": b""})
    elif case == "no-manifest":
        archive = _tar(archive, {"x/README.md": b"nothing here"})
    elif case == "fifo":
        os.mkfifo(archive)
    before = snapshot(index)
    fail(code, "registry", "publish", archive, "--index", index)
    assert snapshot(index) == before
    assert not (index / "archives").exists()


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _retar(path: Path, replace: dict[str, bytes]) -> Path:
    """The archive at `path` with some members' content replaced."""
    with tarfile.open(path, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    members.update(replace)
    return _tar(path.with_name("re-" + path.name), members)


def test_comments_and_layout_of_the_entry_survive(tmp_path: Path, index: Path) -> None:
    ok("registry", "publish", packed(tmp_path), "--index", index)
    text = entry_text(index, "review-pack")
    text = "# Reviewed by @alice.\n\n" + text.replace('tier = "community"', 'tier = "community"  # see #12')
    text = text.replace('min_compozy_version = "0.5.0"', '# checked against host 0.5\nmin_compozy_version = "0.5.0"')
    set_entry_text(index, "review-pack", text)
    ok("registry", "build", index)
    ok("registry", "publish", packed(tmp_path, version="0.3.0"), "--index", index)
    ok("registry", "publish", packed(tmp_path, version="0.2.0"), "--index", index)  # lands in the middle
    new = entry_text(index, "review-pack")
    assert new.startswith("# Reviewed by @alice.\n\n")
    assert 'tier = "community"  # see #12' in new
    assert "# checked against host 0.5\nmin_compozy_version" in new
    assert [v["version"] for v in tomllib.loads(new)["versions"]] == ["0.1.0", "0.2.0", "0.3.0"]
    assert "\n\n[[versions]]\nversion = \"0.2.0\"" in new and "\n\n[[versions]]\nversion = \"0.3.0\"" in new
    parse_entry(new.encode(), "extensions/re/review-pack.toml", expected_name="review-pack")
    assert serial(index) == 3
    assert ok("registry", "validate", index, "--fetch")["valid"] is True


def test_url_option(tmp_path: Path, index: Path) -> None:
    archive = packed(tmp_path)
    url = "https://downloads.example.com/review-pack-0.1.0.tar.gz"
    doc = ok("registry", "publish", archive, "--index", index, "--url", url)
    assert doc["published"]["url"] == url and doc["published"]["archive"] is None
    assert not (index / "archives").exists()
    assert entry(index, "review-pack")["versions"][0]["url"] == url
    for bad in ("archives/x.tar.gz", "http://downloads.example.com/x.tar.gz", "https://u:p@example.com/x.tar.gz",
                "https://example.com/x.tar.gz#frag", "ftp://example.com/x.tar.gz"):
        fail("usage", "registry", "publish", packed(tmp_path, version="0.2.0"), "--index", index, "--url", bad)
    ok("registry", "publish", packed(tmp_path, version="0.2.0"), "--index", index,
       "--url", "http://127.0.0.1:8080/review-pack-0.2.0.tar.gz")


def test_publish_refusals_of_usage(tmp_path: Path, index: Path) -> None:
    archive = packed(tmp_path)
    fail("not_found", "registry", "publish", archive, "--index", tmp_path / "nowhere")
    fail("usage", "registry", "publish", archive, "--index", index, "--tier", "gold")
    fail("usage", "registry", "publish", archive, "--index", index, "--published", "yesterday")
    fail("usage", "registry", "publish", archive, "--index", index, "--published", "2026-01-01T00:00:00")
    fail("usage", "registry", "publish", archive, "--index", index, "--asset", "x.tar.gz")
    fail("invalid_archive", "registry", "publish", tmp_path / "src", "--index", index)
    assert serial(index) == 0


def test_publish_into_a_broken_index_is_refused(tmp_path: Path, index: Path) -> None:
    (index / "extensions" / "zz").mkdir()
    (index / "extensions" / "zz" / "misplaced.toml").write_text('name = "misplaced"\ntier = "community"\n'
                                                                "versions = []\n")
    before = snapshot(index)
    doc = fail("invalid_index", "registry", "publish", packed(tmp_path), "--index", index)
    assert "registry validate" in doc["error"]["message"]
    assert snapshot(index) == before


def test_a_held_lock_makes_publish_wait_then_fail_locked(tmp_path: Path, index: Path) -> None:
    from filelock import FileLock

    archive = packed(tmp_path)
    before = snapshot(index)
    with FileLock(str(index / LOCK_FILE)):
        doc = fail("locked", "registry", "publish", archive, "--index", index, "--lock-timeout", "0.1")
    assert doc["error"]["exit_code"] == 6
    assert snapshot(index) == before


def _facts(archive: Path):  # noqa: ANN202 - ArchiveFacts
    from pkgmgr.config import Config

    return inspect_archive(archive, config=Config(reserved_agent_names=()))


def test_concurrent_publishes_do_not_interleave(tmp_path: Path, index: Path) -> None:
    archives = [packed(tmp_path, version=f"0.{i}.0") for i in range(1, 5)]
    errors: list[BaseException] = []

    def run(archive: Path) -> None:
        try:
            publish(index, archive, _facts(archive), url=None, timeout=30)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(a,)) for a in archives]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert serial(index) == 4
    assert [v["version"] for v in entry(index, "review-pack")["versions"]] == ["0.1.0", "0.2.0", "0.3.0", "0.4.0"]
    assert ok("registry", "validate", index, "--fetch")["valid"] is True


def test_a_failed_write_puts_the_index_back(tmp_path: Path, index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ok("registry", "publish", packed(tmp_path), "--index", index)
    before = snapshot(index)
    from pkgmgr.registry import switch as switch_module

    real = switch_module._write

    def failing(path: Path, data: bytes) -> None:  # the disk fills while the change is staged
        if b'"format": 1' in data and b'"extensions"' in data:  # index.json's new bytes
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(switch_module, "_write", failing)
    archive = packed(tmp_path, version="0.2.0")
    with pytest.raises(OSError):
        publish(index, archive, _facts(archive), url=None)
    monkeypatch.undo()
    after = snapshot(index)
    assert after == before and not (index / ".pkgmgr-staging").exists()
    assert hashlib.sha256(after["registry.toml"]).hexdigest() == hashlib.sha256(before["registry.toml"]).hexdigest()


def test_publish_function_refuses_without_archive_or_url(tmp_path: Path, index: Path) -> None:
    archive = packed(tmp_path)
    with pytest.raises(PkgmgrError) as caught:
        publish(index, None, _facts(archive), url=None)
    assert caught.value.code == "usage"
