"""`pkgmgr registry validate DIR [--base REV] [--fetch]`: every rule, every problem, with lines."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest

from tests.publish.helpers import entry_text, fail, ok, pack, packed, set_entry_text, variant
from tests.support.cli import run_cli
from tests.support.servers import StaticFileServer

ZERO = "0" * 64


def line_of(text: str, needle: str, start: int = 0) -> int:
    return text[: text.index(needle, start)].count("\n") + 1


def problems(doc: dict) -> list[tuple]:
    return [(p["code"], p["file"], p["key"], p["line"]) for p in doc["problems"]]


def invalid(*args: object) -> dict:
    doc = fail("invalid_index", "registry", "validate", *args)
    assert doc["valid"] is False and doc["problems"]
    assert doc["error"]["details"]["problems"] == doc["problems"]
    assert all(set(p) == {"code", "file", "line", "key", "message"} for p in doc["problems"])
    return doc


@pytest.fixture
def published(tmp_path: Path, index: Path) -> Path:
    for version in ("0.1.0", "0.2.0"):
        ok("registry", "publish", packed(tmp_path, version=version), "--index", index)
    return index


def test_a_valid_index(published: Path) -> None:
    doc = ok("registry", "validate", published)
    assert doc == {"valid": True, "problems": [],
                   "checked": {"entries": 1, "versions": 2, "fetched": 0, "base": None}}
    result = run_cli(["registry", "validate", published])
    assert result.code == 0 and "valid (1 extension(s), 2 version(s))" in result.stdout


def test_every_problem_is_listed_with_its_file_and_line(published: Path) -> None:
    text = entry_text(published, "review-pack").replace('version = "0.2.0"', 'version = "0.2"', 1)
    text = text.replace("sha256 = ", 'sha256 = "XYZ"\n# was: ', 1)
    set_entry_text(published, "review-pack", text)
    registry = (published / "registry.toml").read_text().replace("serial = 2", "serial = 2\nowner = \"me\"")
    (published / "registry.toml").write_text(registry)
    shard = published / "extensions" / "zz"
    shard.mkdir()
    (shard / "prompt-enhancer.toml").write_text('name = "prompt-enhancer"\ntier = "community"\nversions = []\n')
    other = ("# hand-written\nname = \"release-tools\"\ntier = \"community\"\n\n"
             "[[versions]]\nversion = \"1.0.0-rc.1\"\nurl = \"http://example.com/a.tar.gz\"\n"
             f"sha256 = \"{ZERO}\"\nsize = 10\nmin_compozy_version = \"0.5.0\"\n\n"
             "[[versions]]\nversion = \"1.0.0-rc1\"\nurl = \"https://user:pw@example.com/b.tar.gz\"\n"
             f"sha256 = \"{ZERO}\"\nsize = 10\nmin_compozy_version = \"0.5.0\"\n\n"
             "[[versions]]\nversion = \"0.9.0\"\nurl = \"archives/c.tar.gz#x\"\n"
             f"sha256 = \"{ZERO}\"\nsize = 10\nmin_compozy_version = \"0.5.0\"\n")
    (published / "extensions" / "re" / "release-crew.toml").write_text(other)
    (published / "extensions" / "re" / "notes.txt").write_text("hello")
    doc = invalid(published)
    found = problems(doc)
    review = "extensions/re/review-pack.toml"
    crew = "extensions/re/release-crew.toml"
    expected = [
        ("invalid_index", "registry.toml", "registry.owner", line_of(registry, "owner =")),
        ("invalid_index", review, "versions[0].sha256", line_of(text, 'sha256 = "XYZ"')),
        ("invalid_index", review, "versions[1].version", line_of(text, 'version = "0.2"')),
        ("invalid_index", crew, "name", line_of(other, "name = ")),
        ("invalid_index", crew, "versions[1].version", line_of(other, 'version = "1.0.0-rc1"')),
        ("invalid_index", crew, "versions[0].url", line_of(other, "url = \"http://example")),
        ("invalid_index", crew, "versions[1].url", line_of(other, "url = \"https://user")),
        ("invalid_index", crew, "versions[2].url", line_of(other, "url = \"archives/c")),
        ("invalid_index", crew, "versions[2].version", line_of(other, 'version = "0.9.0"')),
        ("invalid_index", "extensions/re/notes.txt", "", None),
        ("invalid_index", "extensions/zz/prompt-enhancer.toml", "", None),
    ]
    for item in expected:
        assert item in found, (item, found)
    result = run_cli(["registry", "validate", published])
    assert result.code == 3 and result.stdout == ""
    rc1_line = line_of(other, 'version = "1.0.0-rc1"')
    assert f"{crew}:{rc1_line}: versions[1].version:" in result.stderr
    assert "Traceback" not in result.stderr


def test_plain_http_only_for_loopback(published: Path) -> None:
    text = entry_text(published, "review-pack")
    set_entry_text(published, "review-pack", text.replace("url = \"archives/review-pack-0.1.0.tar.gz\"",
                                                          "url = \"http://127.0.0.1:9/r.tar.gz\"", 1))
    ok("registry", "build", published)
    assert ok("registry", "validate", published)["valid"] is True
    set_entry_text(published, "review-pack", text.replace("url = \"archives/review-pack-0.1.0.tar.gz\"",
                                                          "url = \"http://mirror.example.com/r.tar.gz\"", 1))
    ok("registry", "build", published)
    doc = invalid(published)
    assert [p["key"] for p in doc["problems"]] == ["versions[0].url"]
    assert "loopback" in doc["problems"][0]["message"]


def test_index_json_must_be_in_sync(published: Path) -> None:
    (published / "registry.toml").write_text((published / "registry.toml").read_text().replace("serial = 2",
                                                                                             "serial = 3"))
    doc = invalid(published)
    assert problems(doc) == [("invalid_index", "index.json", "", None)]
    assert "registry build" in doc["problems"][0]["message"]
    ok("registry", "build", published)
    ok("registry", "validate", published)
    (published / "index.json").unlink()
    assert problems(invalid(published)) == [("invalid_index", "index.json", "", None)]
    (published / "index.json").write_text("{not json")
    assert problems(invalid(published)) == [("invalid_index", "index.json", "", 1)]


def test_a_directory_without_registry_files(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    doc = invalid(tmp_path / "empty")
    assert {p["file"] for p in doc["problems"]} == {"registry.toml", "extensions", "index.json"}
    fail("not_found", "registry", "validate", tmp_path / "nowhere")


def test_an_expired_registry(published: Path) -> None:
    path = published / "registry.toml"
    path.write_text(path.read_text() + "expires = 2001-01-01T00:00:00Z\n")
    ok("registry", "build", published)
    assert [p["key"] for p in invalid(published)["problems"]] == ["registry.expires"]


# --- --base ------------------------------------------------------------------------------------


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-c", "user.email=ci@example.com", "-c", "user.name=CI", "-c",
                           "commit.gpgsign=false", "-C", str(root), *args], capture_output=True, text=True,
                          check=True)
    return proc.stdout


@pytest.fixture
def repo(published: Path) -> Path:
    git(published, "init", "-q")
    git(published, "add", "-A")
    git(published, "commit", "-q", "-m", "base")
    return published


def test_base_unchanged_and_yank_allowed(tmp_path: Path, repo: Path) -> None:
    assert ok("registry", "validate", repo, "--base", "HEAD")["checked"]["base"] == "HEAD"
    ok("registry", "yank", repo, "review-pack", "0.1.0")
    ok("registry", "publish", packed(tmp_path, version="0.3.0"), "--index", repo)
    doc = ok("registry", "validate", repo, "--base", "HEAD", "--fetch")
    assert doc["checked"]["fetched"] == 1  # only the version new since HEAD


def test_base_detects_a_changed_sha256(repo: Path) -> None:
    text = entry_text(repo, "review-pack")
    old = tomllib.loads(text)["versions"][1]["sha256"]
    changed = text.replace(old, ZERO)
    set_entry_text(repo, "review-pack", changed)
    doc = invalid(repo, "--base", "HEAD")
    assert problems(doc) == [("invalid_index", "extensions/re/review-pack.toml", "versions[1].sha256",
                              line_of(changed, f'sha256 = "{ZERO}"'))]
    assert old in doc["problems"][0]["message"] and "only yanked may" in doc["problems"][0]["message"]


def test_base_detects_a_changed_url_and_size(repo: Path) -> None:
    text = entry_text(repo, "review-pack")
    size = tomllib.loads(text)["versions"][0]["size"]
    text = text.replace(f"size = {size}", f"size = {size + 1}").replace("archives/review-pack-0.1.0.tar.gz",
                                                                        "archives/other.tar.gz")
    set_entry_text(repo, "review-pack", text)
    keys = [p["key"] for p in invalid(repo, "--base", "HEAD")["problems"]]
    assert "versions[0].url" in keys and "versions[0].size" in keys


def test_base_detects_a_removed_version(repo: Path) -> None:
    text = entry_text(repo, "review-pack")
    cut = text[: text.index('[[versions]]\nversion = "0.2.0"')].rstrip() + "\n"
    set_entry_text(repo, "review-pack", cut)
    ok("registry", "build", repo)
    doc = invalid(repo, "--base", "HEAD")
    messages = [p["message"] for p in doc["problems"] if p["file"] == "extensions/re/review-pack.toml"]
    assert len(messages) == 1 and "0.2.0" in messages[0] and "disappeared" in messages[0]
    # the serial did not move although a version went away
    assert ("invalid_index", "registry.toml", "registry.serial") in [p[:3] for p in problems(doc)]


def test_base_detects_a_removed_entry_and_a_lower_serial(repo: Path) -> None:
    (repo / "extensions" / "re" / "review-pack.toml").unlink()
    path = repo / "registry.toml"
    path.write_text(path.read_text().replace("serial = 2", "serial = 1"))
    ok("registry", "build", repo)
    doc = invalid(repo, "--base", "HEAD")
    assert sum("disappeared" in p["message"] for p in doc["problems"]) == 2
    assert any(p["key"] == "registry.serial" and "went down" in p["message"] for p in doc["problems"])


def test_base_that_is_not_a_commit(repo: Path, tmp_path: Path) -> None:
    fail("usage", "registry", "validate", repo, "--base", "no-such-branch")
    fail("usage", "registry", "validate", repo, "--base", "--upload-pack=evil")
    (tmp_path / "plain").mkdir()
    ok("registry", "init", tmp_path / "plain" / "idx")
    fail("usage", "registry", "validate", tmp_path / "plain" / "idx", "--base", "HEAD")


def test_base_for_an_index_in_a_subdirectory(tmp_path: Path) -> None:
    root = tmp_path / "monorepo"
    root.mkdir()
    ok("registry", "init", root / "registry", "--format", "1")
    ok("registry", "publish", packed(tmp_path), "--index", root / "registry")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    text = entry_text(root / "registry", "review-pack")
    set_entry_text(root / "registry", "review-pack", text.replace('size = ', 'size = 1', 1))
    assert [p["key"] for p in invalid(root / "registry", "--base", "HEAD")["problems"]] == ["versions[0].size"]


# --- --fetch -----------------------------------------------------------------------------------


def test_fetch_detects_a_checksum_mismatch(tmp_path: Path, published: Path) -> None:
    target = published / "archives" / "review-pack-0.2.0.tar.gz"
    target.write_bytes((published / "archives" / "review-pack-0.1.0.tar.gz").read_bytes())
    doc = invalid(published, "--fetch")
    found = {(p["code"], p["key"]) for p in doc["problems"]}
    assert ("checksum_mismatch", "versions[1].sha256") in found
    assert ("metadata_mismatch", "versions[1].version") in found  # the copied archive says 0.1.0
    assert doc["checked"]["fetched"] == 2


def test_fetch_detects_a_manifest_version_mismatch(tmp_path: Path, published: Path) -> None:
    """The entry says 0.3.0, the archive (sha256 and size right) says 0.2.5."""
    archive = packed(tmp_path, version="0.2.5")
    data = archive.read_bytes()
    (published / "archives" / "review-pack-0.3.0.tar.gz").write_bytes(data)
    text = entry_text(published, "review-pack") + (
        "\n[[versions]]\nversion = \"0.3.0\"\nurl = \"archives/review-pack-0.3.0.tar.gz\"\n"
        f"sha256 = \"{hashlib.sha256(data).hexdigest()}\"\nsize = {len(data)}\nmin_compozy_version = \"0.5.0\"\n"
        "network_digest = \"\"\npermissions = [\"session.read\"]\n")
    set_entry_text(published, "review-pack", text)
    ok("registry", "build", published)
    doc = invalid(published, "--fetch")
    found = [(p["code"], p["key"], p["line"]) for p in doc["problems"]]
    start = text.index('version = "0.3.0"')
    assert ("metadata_mismatch", "versions[2].version", line_of(text, 'version = "0.3.0"')) in found
    assert ("metadata_mismatch", "versions[2].permissions", line_of(text, "permissions = [\"session", start)) in found
    assert all(code == "metadata_mismatch" for code, _, _ in found)


def test_fetch_reports_a_missing_archive_and_an_invalid_one(tmp_path: Path, published: Path) -> None:
    (published / "archives" / "review-pack-0.1.0.tar.gz").unlink()
    (published / "archives" / "review-pack-0.2.0.tar.gz").write_text("not an archive")
    doc = invalid(published, "--fetch")
    codes = {(p["code"], p["key"]) for p in doc["problems"]}
    assert ("not_found", "versions[0].url") in codes
    assert ("invalid_archive", "versions[1]") in codes and ("checksum_mismatch", "versions[1].sha256") in codes


def test_fetch_downloads_absolute_urls(tmp_path: Path, index: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    good = packed(tmp_path)
    (served / "review-pack-0.1.0.tar.gz").write_bytes(good.read_bytes())
    with StaticFileServer(served) as server:
        ok("registry", "publish", good, "--index", index, "--url", f"{server.url}/review-pack-0.1.0.tar.gz")
        assert ok("registry", "validate", index, "--fetch")["checked"]["fetched"] == 1
        assert server.count("/review-pack-0.1.0.tar.gz") == 1
        (served / "review-pack-0.1.0.tar.gz").write_bytes(packed(tmp_path, version="0.1.1").read_bytes())
        codes = {p["code"] for p in invalid(index, "--fetch")["problems"]}
        assert "checksum_mismatch" in codes and "metadata_mismatch" in codes
        (served / "review-pack-0.1.0.tar.gz").unlink()
        assert {p["code"] for p in invalid(index, "--fetch")["problems"]} == {"not_found"}


def test_fetch_checks_bundles(tmp_path: Path, index: Path) -> None:
    source = variant(tmp_path / "ml", "marketing-linear")
    archive = tmp_path / "ml.tar.gz"
    pack(source, archive)
    ok("registry", "publish", archive, "--index", index)
    # swap in an archive whose bundle is broken, and make the entry agree with its bytes
    with tarfile.open(archive, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    members["marketing-linear-0.1.0/bundles/marketing.toml"] = b'name = "marketing-linear"\n'
    bad = index / "archives" / "marketing-linear-0.1.0.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    data = bad.read_bytes()
    text = entry_text(index, "marketing-linear")
    old = tomllib.loads(text)["versions"][0]
    text = text.replace(old["sha256"], hashlib.sha256(data).hexdigest()).replace(f"size = {old['size']}",
                                                                                f"size = {len(data)}")
    set_entry_text(index, "marketing-linear", text)
    codes = {p["code"] for p in invalid(index, "--fetch")["problems"]}
    assert codes == {"invalid_bundle"}
