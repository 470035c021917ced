"""The commands that see every host: `pkgmgr hosts`, `ext list --host`, names held by two hosts."""

from __future__ import annotations

from pathlib import Path

from tests.hosts.helpers import (
    UNVERIFIED,
    Homes,
    eva_script,
    fail,
    human,
    ok,
    terva_extension,
    vera_extension,
)
from tests.support.builders import write_extension


def test_hosts_lists_every_host_with_its_homes_and_counts(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    eva_script(homes.eva / "extensions", "mine")  # copied by hand
    document = ok("hosts", "--workspace", tmp_path)
    by_name = {h["name"]: h for h in document["hosts"]}
    assert [h["name"] for h in document["hosts"]] == ["compozy", "terva", "eva", "vera", "gemini", "claude"]
    assert by_name["compozy"]["homes"]["global"] == str(homes.pkgmgr)
    assert by_name["terva"]["homes"] == {"global": str(homes.terva / "extensions"),
                                         "project": str(tmp_path.resolve() / ".terva" / "extensions")}
    assert by_name["eva"]["homes"]["global"] == str(homes.eva / "extensions")
    assert by_name["vera"]["homes"] == {"global": str(homes.vera / "extensions"), "project": None}
    assert by_name["gemini"]["homes"] == {"global": str(homes.gemini_extensions), "project": None}
    assert by_name["claude"]["homes"]["global"] == str(homes.pkgmgr / "claude" / "plugins")  # pkgmgr's marketplace
    assert (by_name["terva"]["managed"], by_name["terva"]["unmanaged"]) == (1, 0)
    assert (by_name["eva"]["managed"], by_name["eva"]["unmanaged"]) == (0, 1)
    table = human("hosts").stdout
    assert table.splitlines()[0].split() == ["HOST", "GLOBAL", "PROJECT", "MANAGED", "UNMANAGED"]


def test_list_has_a_host_column_and_filter(tmp_path: Path) -> None:
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    ok("ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED)
    ok("ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED)
    ok("ext", "install", write_extension(tmp_path / "src" / "demo-ext"), *UNVERIFIED)
    listed = ok("ext", "list")["extensions"]
    assert [(e["host"], e["name"]) for e in listed] == [("compozy", "demo-ext"), ("eva", "notes"),
                                                        ("terva", "hello"), ("vera", "acme.context-tools")]
    assert [e["name"] for e in ok("ext", "list", "--host", "vera")["extensions"]] == ["acme.context-tools"]
    assert [e["name"] for e in ok("ext", "list", "--host", "compozy")["extensions"]] == ["demo-ext"]
    header = human("ext", "list").stdout.splitlines()[0].split()
    assert header[:3] == ["NAME", "VERSION", "HOST"]


def test_a_name_two_hosts_hold_needs_host(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "install", write_extension(tmp_path / "src" / "demo-ext"), *UNVERIFIED)
    ok("ext", "install", terva_extension(tmp_path / "src2" / "demo-ext", name="demo-ext"), *UNVERIFIED)
    error = fail("usage", "ext", "remove", "demo-ext")["error"]
    assert error["details"]["hosts"] == ["compozy", "terva"]
    fail("usage", "ext", "status", "demo-ext")
    ok("ext", "remove", "demo-ext", "--host", "terva")
    assert not (homes.terva / "extensions" / "demo-ext").exists()
    assert ok("ext", "status", "demo-ext")["name"] == "demo-ext"  # only Compozy's is left
    ok("ext", "remove", "demo-ext")


def test_one_command_for_names_of_several_hosts(tmp_path: Path) -> None:
    ok("ext", "install", write_extension(tmp_path / "src" / "demo-ext"), *UNVERIFIED)
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    assert [r["name"] for r in ok("ext", "verify", "--all")["verified"]] == ["demo-ext", "hello"]
    disabled = ok("ext", "disable", "demo-ext", "hello")["disabled"]
    assert sorted(d["name"] for d in disabled) == ["demo-ext", "hello"]
    removed = ok("ext", "remove", "hello", "demo-ext")["removed"]
    assert sorted(r["name"] for r in removed) == ["demo-ext", "hello"]
    assert ok("ext", "list")["extensions"] == []


def test_installing_a_bare_name_again_says_it_is_there(tmp_path: Path) -> None:
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    [skipped] = ok("ext", "install", "hello")["skipped"]
    assert skipped["name"] == "hello" and "already installed" in skipped["reason"]


def test_validate_reports_the_host(tmp_path: Path) -> None:
    document = ok("ext", "validate", vera_extension(tmp_path / "ctx"))
    assert (document["host"], document["name"], document["capabilities"]) == (
        "vera", "acme.context-tools", ["commands.register", "models.complete"])
    assert ok("ext", "validate", eva_script(tmp_path, "notes"))["host"] == "eva"
    assert ok("ext", "validate", terva_extension(tmp_path / "hello"))["host"] == "terva"
    assert "host" not in ok("ext", "validate", write_extension(tmp_path / "demo-ext"))  # Compozy's, as before
