"""cli.registry_cmds: argument checks and the human and JSON output of the registry commands —
add, list, remove, refresh for the configured registries, and init, publish, validate, build,
yank, unyank for a registry index directory. Registries are local directories here (no
network); tests/e2e/test_registry_cli.py drives them over loopback HTTP."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pkgmgr.registry.layout import entry_path
from tests.cli.helpers import FIXTURES, fail, human, ok
from tests.registry.helpers import RegistryDir


@pytest.fixture
def local(tmp_path: Path) -> RegistryDir:
    regdir = RegistryDir(tmp_path / "index", "local", serial=3)
    regdir.publish("demo-ext", "0.1.0")  # serial 4
    return regdir


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


# --- add -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Acme", "9lives", "_x", "a.b", "a" * 65, "acme!"])
def test_add_refuses_a_bad_name(name: str, local: RegistryDir, home: Path) -> None:
    document = fail("usage", "registry", "add", name, local.root)
    assert "is not a registry name" in document["error"]["message"]
    assert not (home / "config.toml").exists()


@pytest.mark.parametrize("name", ["a", "acme_2", "x-y", "a" * 64])
def test_add_accepts_a_good_name(name: str, local: RegistryDir) -> None:
    assert ok("registry", "add", name, local.root)["added"]["name"] == name


def test_add_reads_the_registry_once_to_remember_its_serial(local: RegistryDir) -> None:
    result = human("registry", "add", "local", local.root)
    assert result.stdout == f"added registry local ({local.root}, priority 100)\n" and result.stderr == ""
    assert ok("registry", "list")["registries"][0] == {
        "name": "local", "source": str(local.root), "priority": 100, "serial": 4, "insecure": False,
        "workspace": False, "signed": False}


def test_add_offline_records_only(local: RegistryDir) -> None:
    added = ok("registry", "add", "local", local.root, "--priority", "7", "--offline")["added"]
    assert added == {"name": "local", "source": str(local.root), "priority": 7, "insecure": False, "serial": None,
                     "signed": False}
    listed = human("registry", "list").stdout
    assert rows(listed)[1] == ["local", "7", "-", str(local.root)]  # never read: no serial yet


def test_add_a_source_that_cannot_be_parsed(home: Path) -> None:
    result = human("registry", "add", "weird", "ftp://example.org/index", code=2)
    assert result.stderr.startswith("error[usage]: ")
    assert not (home / "config.toml").exists()


def test_priority_must_be_an_integer(local: RegistryDir) -> None:
    fail("usage", "registry", "add", "local", local.root, "--priority", "high")


# --- list ----------------------------------------------------------------------------------------


def test_list_is_in_resolution_order_with_flags(local: RegistryDir, tmp_path: Path) -> None:
    ok("registry", "add", "later", local.root, "--priority", "200")
    ok("registry", "add", "sooner", local.root, "--priority", "5")
    ok("registry", "add", "far", "http://registry.example.com/", "--insecure", "--offline")
    table = rows(human("registry", "list").stdout)
    assert table[0] == ["NAME", "PRIORITY", "SERIAL", "SOURCE"]
    assert [r[:3] for r in table[1:]] == [["sooner", "5", "4"], ["far", "100", "-"], ["later", "200", "4"],
                                         ["default", "1000", table[4][2]]]
    assert table[2][3:] == ["http://registry.example.com/", "(insecure)"]
    assert [r["name"] for r in ok("registry", "list")["registries"]] == ["sooner", "far", "later", "default"]


def test_list_of_a_fresh_home_shows_the_shipped_registry(home: Path) -> None:
    [default] = ok("registry", "list")["registries"]
    assert (default["name"], default["priority"]) == ("default", 1000) and isinstance(default["serial"], int)
    assert not home.exists()


# --- remove --------------------------------------------------------------------------------------


def test_remove_says_what_it_forgot_and_drops_the_empty_table(local: RegistryDir, home: Path) -> None:
    ok("registry", "add", "local", local.root)
    result = human("registry", "remove", "local")
    assert result.stdout == (f"removed registry local ({local.root}); "
                             "its remembered serial and checksums are forgotten\n")
    assert "registries" not in (home / "config.toml").read_text()
    document = fail("not_found", "registry", "remove", "local")
    assert "pkgmgr registry list" in human("registry", "remove", "local", code=5).stderr
    assert document["error"]["message"] == "no registry named 'local' is configured"


def test_the_shipped_registry_cannot_be_removed(home: Path) -> None:
    assert "cannot be removed" in fail("usage", "registry", "remove", "default")["error"]["message"]


# --- refresh -------------------------------------------------------------------------------------


def test_refresh_table_and_document(local: RegistryDir) -> None:
    ok("registry", "add", "local", local.root)
    table = rows(human("registry", "refresh", "local").stdout)
    assert table == [["NAME", "SERIAL", "EXTENSIONS", "SOURCE"], ["local", "4", "1", str(local.root)]]
    document = ok("registry", "refresh", "local")
    assert document == {"refreshed": [{"name": "local", "source": str(local.root), "serial": 4, "expires": None,
                                       "extensions": 1}], "failed": []}


def test_refresh_shows_the_expiry_and_a_registry_without_index(tmp_path: Path) -> None:
    regdir = RegistryDir(tmp_path / "dated", "dated", expires="2999-01-01T00:00:00Z")
    (regdir.root / "index.json").unlink()
    ok("registry", "add", "dated", regdir.root)
    [entry] = ok("registry", "refresh", "dated")["refreshed"]
    assert entry["expires"].startswith("2999-01-01T00:00:00") and entry["extensions"] is None
    assert rows(human("registry", "refresh", "dated").stdout)[1][:3] == ["dated", "1", "-"]


def test_refresh_reports_each_failure_and_goes_on(local: RegistryDir, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "registry.toml").write_text("[registry\n")
    ok("registry", "add", "broken", broken, "--priority", "1", "--offline")
    ok("registry", "add", "local", local.root, "--priority", "2")
    result = human("registry", "refresh", code=3)
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:3]] == ["local", "default"]
    assert lines[3].startswith("failed broken: [invalid_index] ")
    assert result.stderr.startswith("error[invalid_index]: ")
    document = fail("invalid_index", "registry", "refresh")
    assert [r["name"] for r in document["refreshed"]] == ["local", "default"]
    assert [(f["name"], f["error"]["code"]) for f in document["failed"]] == [("broken", "invalid_index")]


def test_refresh_of_an_unknown_name(home: Path) -> None:
    fail("not_found", "registry", "refresh", "nothing")


# --- init, publish, validate, build, yank, unyank ------------------------------------------------------


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = tmp_path / "review-pack-0.1.0.tar.gz"
    ok("ext", "pack", FIXTURES / "review-pack", "--output", path)
    return path


def test_init_human_output(tmp_path: Path) -> None:
    index = tmp_path / "acme-index"
    result = human("registry", "init", index, "--name", "acme")
    lines = result.stdout.splitlines()
    assert lines[0] == f"initialized registry acme in {index} (serial 0)"
    assert "  registry.toml" in lines and "  .github/workflows/validate.yml" in lines
    assert lines[-1] == f"next: pkgmgr registry publish ARCHIVE --index {index}"
    document = ok("registry", "init", tmp_path / "other")["initialized"]
    assert document["name"] == "other"  # from the directory's name


def test_publish_human_output_then_the_same_again(tmp_path: Path, archive: Path) -> None:
    index = tmp_path / "idx"
    ok("registry", "init", index, "--name", "acme")
    lines = human("registry", "publish", archive, "--index", index, "--published",
                  "2026-01-01T00:00:00Z").stdout.splitlines()
    assert lines[0] == f"published review-pack 0.1.0 to {index} (serial 1)"
    fields = dict(line.strip().split(":", 1) for line in lines[1:])
    assert fields["url"].strip() == "archives/review-pack-0.1.0.tar.gz"
    assert fields["tier"].strip() == "community" and fields["network"].strip() == "none"
    assert fields["entry"].strip().endswith(entry_path("review-pack", 2))  # format 2, init's default
    again = human("registry", "publish", archive, "--index", index)
    assert again.stdout == (f"review-pack 0.1.0 is already published in {index} with the same sha256; "
                            "nothing changed (serial 1)\n")
    document = ok("registry", "publish", archive, "--index", index)
    assert (document["changed"], document["serial"], document["repaired_index"]) == (False, 1, False)


def test_publish_argument_checks(tmp_path: Path, archive: Path) -> None:
    index = tmp_path / "idx"
    ok("registry", "init", index)
    message = fail("usage", "registry", "publish", archive, "--index", index, "--asset", "x.tar.gz")
    assert "--asset applies to a github:" in message["error"]["message"]
    fail("usage", "registry", "publish", archive)  # --index is required
    fail("usage", "registry", "publish", archive, "--index", index, "--tier", "gold")
    assert tomllib.loads((index / "registry.toml").read_text())["registry"]["serial"] == 0  # unchanged


def test_validate_human_output(tmp_path: Path, archive: Path) -> None:
    index = tmp_path / "idx"
    ok("registry", "init", index, "--format", "1")
    ok("registry", "publish", archive, "--index", index)
    assert human("registry", "validate", index).stdout == f"{index}: valid (1 extension(s), 1 version(s))\n"
    (index / "index.json").write_text("{}")
    result = human("registry", "validate", index, code=3)
    assert result.stdout == ""  # the problems go to stderr with the error
    assert result.stderr.startswith(f"error[invalid_index]: {index}: ")
    document = fail("invalid_index", "registry", "validate", index)
    assert document["valid"] is False and document["error"]["details"]["problems"]


def test_build_yank_and_unyank_human_output(tmp_path: Path, archive: Path) -> None:
    index = tmp_path / "idx"
    ok("registry", "init", index, "--format", "1")
    ok("registry", "publish", archive, "--index", index)
    built = index / "index.json"
    assert human("registry", "build", index).stdout == f"{built}: already up to date (serial 1, 1 extension(s))\n"
    built.write_text("{}")
    assert human("registry", "build", index).stdout == f"{built}: rebuilt (serial 1, 1 extension(s))\n"
    assert human("registry", "yank", index, "review-pack", "0.1.0").stdout == "yanked review-pack 0.1.0 (serial 2)\n"
    assert human("registry", "yank", index, "review-pack", "0.1.0").stdout == \
        "review-pack 0.1.0 is already yanked; nothing changed (serial 2)\n"
    assert human("registry", "unyank", index, "review-pack", "0.1.0").stdout == \
        "unyanked review-pack 0.1.0 (serial 3)\n"
    assert human("registry", "unyank", index, "review-pack", "0.1.0").stdout == \
        "review-pack 0.1.0 is already not yanked; nothing changed (serial 3)\n"
    fail("version_not_found", "registry", "yank", index, "review-pack", "9.9.9")
