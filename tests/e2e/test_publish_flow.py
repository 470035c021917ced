"""End-to-end: an author packs an extension, a maintainer publishes it into a new index, users
install and update it from that index served over HTTP on 127.0.0.1, and a yank steers a fresh
install back to the previous version — every step through the real `pkgmgr` entry point."""

from __future__ import annotations

from pathlib import Path

from tests.publish.helpers import fail, ok, pack, variant
from tests.support.cli import run_subprocess
from tests.support.servers import StaticFileServer

NAME = "acme-review"  # the review-pack fixture under a name the shipped registry does not list


def use_home(monkeypatch, home: Path) -> None:  # noqa: ANN001 - pytest's MonkeyPatch
    monkeypatch.setenv("PKGMGR_HOME", str(home))


def installed(name: str = NAME) -> str:
    (found,) = [e for e in ok("ext", "list")["extensions"] if e["name"] == name]
    return found["version"]


def test_publish_install_update_yank(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    # the author: validate and pack 0.1.0
    source = variant(tmp_path / "src" / "0.1.0", "review-pack", name=NAME)
    assert ok("ext", "validate", source)["name"] == NAME
    first = pack(source, tmp_path / "dist" / f"{NAME}-0.1.0.tar.gz")

    # the maintainer: a new index, publish 0.1.0
    index = tmp_path / "index"
    ok("registry", "init", index, "--name", "acme")
    doc = ok("registry", "publish", first["path"], "--index", index)
    assert doc["published"]["sha256"] == first["sha256"] and doc["serial"] == 1
    assert ok("registry", "validate", index, "--fetch")["valid"]

    with StaticFileServer(index) as server:
        # a user installs it by name from the index served over HTTP
        use_home(monkeypatch, tmp_path / "home-a")
        ok("registry", "add", "acme", server.url + "/")
        (done,) = ok("ext", "install", NAME)["installed"]
        assert (done["name"], done["version"], done["source"], done["verified"]) == (NAME, "0.1.0", "registry", True)
        assert server.count(f"/archives/{NAME}-0.1.0.tar.gz") == 1

        # 0.2.0: the fixture with its version bumped and a small change, published
        newer = variant(tmp_path / "src" / "0.2.0", "review-pack", name=NAME, version="0.2.0",
                        files={"CHANGELOG.md": "0.2.0: clearer review checklist\n"})
        second = pack(newer, tmp_path / "dist" / f"{NAME}-0.2.0.tar.gz")
        assert ok("registry", "publish", second["path"], "--index", index)["serial"] == 2
        assert ok("registry", "validate", index, "--fetch")["checked"]["fetched"] == 2

        # `ext update` moves the user to it
        updated = ok("ext", "update", NAME)
        assert [(u["name"], u["version"]) for u in updated["updated"]] == [(NAME, "0.2.0")]
        assert installed() == "0.2.0"

        # the maintainer yanks 0.2.0; a fresh install resolves 0.1.0
        assert ok("registry", "yank", index, NAME, "0.2.0")["serial"] == 3
        use_home(monkeypatch, tmp_path / "home-b")
        ok("registry", "add", "acme", server.url + "/")
        (fresh,) = ok("ext", "install", NAME)["installed"]
        assert fresh["version"] == "0.1.0"
        # a yanked version still installs when named exactly
        (exact,) = ok("ext", "install", f"{NAME}@0.2.0")["installed"]
        assert exact["version"] == "0.2.0"

        # republishing 0.2.0 with other bytes is refused; the served index does not move
        other = variant(tmp_path / "src" / "0.2.0-other", "review-pack", name=NAME, version="0.2.0",
                        files={"CHANGELOG.md": "rewritten history\n"})
        rewritten = pack(other, tmp_path / "dist" / "rewritten.tar.gz")
        fail("version_exists", "registry", "publish", rewritten["path"], "--index", index)
        assert ok("registry", "refresh", "acme")["refreshed"][0]["serial"] == 3


def test_publish_and_validate_in_a_subprocess(tmp_path: Path) -> None:
    source = variant(tmp_path / "src", "prompt-enhancer")
    archive = tmp_path / "prompt-enhancer-0.1.0.tar.gz"
    env = {"PKGMGR_HOME": str(tmp_path / "home")}
    steps = [
        ["ext", "pack", source, "--output", archive],
        ["registry", "init", tmp_path / "index"],
        ["registry", "publish", archive, "--index", tmp_path / "index", "--tier", "official"],
        ["registry", "validate", tmp_path / "index", "--fetch"],
    ]
    for args in steps:
        result = run_subprocess(args, env=env)
        assert result.code == 0, result
    assert "valid (1 extension(s), 1 version(s), 1 archive(s) fetched and verified)" in result.stdout
    broken = run_subprocess(["registry", "yank", tmp_path / "index", "prompt-enhancer", "7.0.0"], env=env)
    assert broken.code == 5 and "error[version_not_found]" in broken.stderr and "Traceback" not in broken.stderr
