"""The registry shipped with pkgmgr (`registry_index/`, the registry named `default`): a real
index built by `registry_index/rebuild.py` with the publishing commands, valid, reproducible,
and usable offline."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.publish.helpers import FIXTURES, REPO, ok

SHIPPED = REPO / "registry_index"
EXPECTED = {("review-pack", "0.1.0"), ("review-pack", "0.2.0"), ("prompt-enhancer", "0.1.0"),
            ("marketing-linear", "0.1.0"), ("release-crew", "0.1.0"),
            ("hello-terva", "0.1.0"), ("session-notes", "0.1.0"), ("word-count", "0.1.0"),  # one per other host
            ("hello-gemini", "0.1.0"), ("standup-notes", "0.1.0")}
MANIFESTS = {"compozy": "extension.toml", "terva": "extension.json", "eva": "extension.exs",
             "vera": "vera.extension.json", "gemini": "gemini-extension.json", "claude": ".claude-plugin/plugin.json"}


def entries(root: Path) -> dict[str, dict]:
    return {p.stem: tomllib.loads(p.read_text("utf-8")) for p in sorted((root / "extensions").rglob("*.toml"))}


def test_the_shipped_registry_passes_validate_with_fetch() -> None:
    doc = ok("registry", "validate", SHIPPED, "--fetch")
    assert doc["valid"] is True
    assert doc["checked"]["fetched"] == len(EXPECTED)


def test_it_lists_the_fixtures_as_verified_entries_with_local_archives() -> None:
    found = entries(SHIPPED)
    assert {(name, v["version"]) for name, e in found.items() for v in e["versions"]} == EXPECTED
    for name, entry in found.items():
        assert entry["tier"] in ("official", "community")
        assert (FIXTURES / name / MANIFESTS[entry.get("host", "compozy")]).is_file()
        for version in entry["versions"]:
            assert version["url"] == f"archives/{name}-{version['version']}.tar.gz"
            assert (SHIPPED / version["url"]).is_file()
            assert not version["yanked"]
    assert found["prompt-enhancer"]["versions"][0]["permissions"] == ["session.read"]
    assert json.loads((SHIPPED / "index.json").read_text())["serial"] == len(EXPECTED)


def test_a_rebuild_gives_the_checked_in_index(tmp_path: Path) -> None:
    """The archives' tar streams, the entries (but for sha256/size, which depend on zlib's
    output), registry.toml and index.json are what `rebuild.py` makes from fixtures/ today."""
    out = tmp_path / "rebuilt"
    proc = subprocess.run([sys.executable, str(SHIPPED / "rebuild.py"), "--output", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "$ pkgmgr registry publish" in proc.stdout
    for name in ("registry.toml", "index.json"):
        assert (out / name).read_bytes() == (SHIPPED / name).read_bytes(), name

    def strip(doc: dict) -> dict:
        return {**doc, "versions": [{k: v for k, v in item.items() if k not in ("sha256", "size")}
                                    for item in doc["versions"]]}

    rebuilt, shipped = entries(out), entries(SHIPPED)
    assert {k: strip(v) for k, v in rebuilt.items()} == {k: strip(v) for k, v in shipped.items()}
    archives = sorted(p.name for p in (SHIPPED / "archives").iterdir())
    assert archives == sorted(p.name for p in (out / "archives").iterdir())
    for name in archives:
        assert gzip.decompress((out / "archives" / name).read_bytes()) == \
            gzip.decompress((SHIPPED / "archives" / name).read_bytes()), f"{name}: rerun registry_index/rebuild.py"


@pytest.fixture
def offline_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PKGMGR_HOME", str(tmp_path / "fresh-home"))


def test_install_from_the_shipped_registry_offline(offline_default: None) -> None:
    doc = ok("--offline", "ext", "install", "marketing-linear")
    (installed,) = doc["installed"]
    assert (installed["name"], installed["version"], installed["source"], installed["verified"]) == \
        ("marketing-linear", "0.1.0", "registry", True)


def test_update_from_the_shipped_registry(offline_default: None) -> None:
    ok("--offline", "ext", "install", "review-pack@0.1.0")
    ok("--offline", "ext", "update", "review-pack")
    listed = ok("ext", "list")["extensions"]
    assert [(e["name"], e["version"]) for e in listed] == [("review-pack", "0.2.0")]


def test_each_hosts_example_installs_offline_where_its_host_loads_it(offline_default: None, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERVA_HOME", str(tmp_path / "terva"))
    monkeypatch.setenv("VERA_HOME", str(tmp_path / "vera"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    doc = ok("--offline", "ext", "install", "hello-terva", "session-notes", "word-count", "hello-gemini",
             "standup-notes")
    assert [(i["name"], i["host"], i["verified"]) for i in doc["installed"]] == [
        ("hello-terva", "terva", True), ("session-notes", "eva", True), ("word-count", "vera", True),
        ("hello-gemini", "gemini", True), ("standup-notes", "claude", True)]
    assert (tmp_path / "gemini" / ".gemini" / "extensions" / "hello-gemini" / "GEMINI.md").is_file()
    assert json.loads((tmp_path / "claude" / "settings.json").read_text())["enabledPlugins"] == {
        "standup-notes@pkgmgr": True}
    assert (tmp_path / "terva" / "extensions" / "hello-terva" / "hello.sh").is_file()
    assert (tmp_path / "user-home" / ".eva" / "extensions" / "session-notes" / "extension.exs").is_file()
    assert json.loads((tmp_path / "vera" / "extensions.json").read_text())["extensions"][0]["id"] == "word-count"
