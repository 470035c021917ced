"""End to end through the `pkgmgr` entry point and a real registry (SPEC 5.6): a maintainer
pushes a packed extension with `registry publish --push`, which records the digest URL; users
install it by name from the index; a second machine installs it from the first machine's
download cache exported as `PKGMGR_SHARED_CACHE` without contacting the registry, and ignores a
tampered copy there; pkgmgr never writes to the shared cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pkgmgr.net.oci import env_name
from tests.publish.helpers import fail, ok, packed
from tests.support.cli import run_cli
from tests.support.ociregistry import PASSWORD, USER, RealRegistry

NAME = "acme-oci"


def tree(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under root: (mode, mtime_ns, content)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            stat = path.stat()
            found[str(path.relative_to(root))] = (stat.st_mode, stat.st_mtime_ns, path.read_bytes())
    return found


def installed(home: Path, *args: str, env: dict[str, str | None]) -> tuple[int, dict, str]:
    result = run_cli(["ext", "install", NAME, "-o", "json", *args], env={"PKGMGR_HOME": str(home), **env})
    assert "Traceback" not in result.stderr
    return result.code, result.json, result.stderr


def test_push_publish_install_and_the_shared_cache(auth_registry: RealRegistry, tmp_path: Path,
                                                   monkeypatch) -> None:
    creds = {env_name(auth_registry.host): f"{USER}:{PASSWORD}"}
    archive = packed(tmp_path, "review-pack", name=NAME)
    index = tmp_path / "index"
    ok("registry", "init", index, "--name", "acme")
    target = f"oci://{auth_registry.host}/acme/{NAME}:0.1.0"

    # without credentials the push is refused and the index does not move
    before = tree(index)
    doc = fail("auth_required", "registry", "publish", archive, "--index", index, "--push", target)
    assert PASSWORD not in str(doc)
    assert tree(index) == before
    assert fail("usage", "registry", "publish", archive, "--index", index, "--push", target, "--url",
                "https://example.com/x.tar.gz")
    assert fail("usage", "registry", "publish", archive, "--index", index, "--push", target.replace(":0.1.0", ""))

    monkeypatch.setenv(*next(iter(creds.items())))
    published = ok("registry", "publish", archive, "--index", index, "--push", target)["published"]
    assert published["url"].startswith(f"oci://{auth_registry.host}/acme/{NAME}@sha256:")
    assert not (index / "archives").exists() or not any((index / "archives").iterdir())
    assert ok("registry", "validate", index, "--fetch")["valid"]
    monkeypatch.delenv(next(iter(creds)))

    # machine A installs it by name; without credentials it is auth_required
    home_a = tmp_path / "home-a"
    run_cli(["registry", "add", "acme", str(index)], env={"PKGMGR_HOME": str(home_a)})
    code, doc, _ = installed(home_a, env={})
    assert code == 4 and doc["error"]["code"] == "auth_required"
    code, doc, _ = installed(home_a, env=creds)
    assert code == 0, doc
    (done,) = doc["installed"]
    assert (done["name"], done["sha256"], done["verified"]) == (NAME, published["sha256"], True)

    # machine B: A's download cache as the shared cache; no credentials, so the registry could
    # not have served it
    shared = home_a / "cache" / "downloads"
    snapshot = tree(shared)
    home_b = tmp_path / "home-b"
    run_cli(["registry", "add", "acme", str(index)], env={"PKGMGR_HOME": str(home_b)})
    code, doc, _ = installed(home_b, "--offline", env={"PKGMGR_SHARED_CACHE": str(shared)})
    assert code == 0, doc
    assert tree(shared) == snapshot

    # a tampered copy in the shared cache is never used: with credentials the registry serves
    # the archive (and a warning says why), without them the install is refused
    tampered = tmp_path / "tampered"
    shutil.copytree(shared, tampered)
    (copy,) = [p for p in (tampered / "sha256").rglob("*") if p.is_file() and p.name == published["sha256"]]
    copy.write_bytes(copy.read_bytes()[:-1] + b"X")
    os.utime(copy, ns=(0, 0))
    tampered_snapshot = tree(tampered)
    for home, env, expected in ((tmp_path / "home-c", {}, 4), (tmp_path / "home-d", creds, 0)):
        run_cli(["registry", "add", "acme", str(index)], env={"PKGMGR_HOME": str(home)})
        code, doc, stderr = installed(home, env={"PKGMGR_SHARED_CACHE": str(tampered), **env})
        assert code == expected, doc
        assert "shared cache" in stderr
    assert tree(tampered) == tampered_snapshot

    # a relative PKGMGR_SHARED_CACHE is a usage error
    run_cli(["registry", "add", "acme", str(index)], env={"PKGMGR_HOME": str(tmp_path / "home-e")})
    code, doc, _ = installed(tmp_path / "home-e", env={"PKGMGR_SHARED_CACHE": "relative/dir"})
    assert code == 2 and doc["error"]["code"] == "usage"


def test_an_entry_naming_a_tag_is_invalid_index(tmp_path: Path) -> None:
    archive = packed(tmp_path, "review-pack", name=NAME)
    index = tmp_path / "index"
    ok("registry", "init", index, "--name", "acme")
    ok("registry", "publish", archive, "--index", index, "--url",
       "oci://127.0.0.1:5000/acme/demo@sha256:" + "a" * 64)
    entry = next((index / "extensions").rglob("*.toml"))
    entry.write_text(entry.read_text().replace("@sha256:" + "a" * 64, ":latest"))
    doc = fail("invalid_index", "registry", "validate", index)
    assert "names a tag" in str(doc)
