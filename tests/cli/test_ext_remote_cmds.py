"""cli.ext_remote_cmds: `ext update` rendering (`update_output`) and argument checks, and the
human output of `ext info` and `ext search`. Registries here are local directories (no network);
the loopback-server flows are in tests/e2e/test_registry_cli.py."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from pkgmgr.cli.ext_remote_cmds import update_output
from pkgmgr.cli.install_common import summary_lines
from pkgmgr.cli.output import Printer
from pkgmgr.errors import PkgmgrError
from pkgmgr.updater import UpdateItem, UpdateReport
from tests.cli.helpers import fail, human, ok
from tests.registry.helpers import RegistryDir

SUMMARY = {"name": "b-ext", "version": "2.0.0", "kind": "resource", "source": "registry", "verified": True,
           "permissions": ["session.read"], "subprocess": None, "network_requirement": None, "network_digest": "",
           "max_scope": None}
ACTIVATION = {"id": "act_0123456789abcdef", "extension": "a-ext", "bundle": "a-ext", "profile": "default",
              "version": 2, "status": "awaiting_confirmation", "network_digest": "ef" * 32, "scope": "global",
              "workspace": ""}


def render(output) -> list[str]:  # noqa: ANN001
    stream = io.StringIO()
    output.human(Printer(stream))
    return [line.rstrip() for line in stream.getvalue().splitlines()]


def report(*items: UpdateItem, activations: list | None = None) -> UpdateReport:
    return UpdateReport(list(items), activations or [])


def updated(name: str, old: str, new: str) -> UpdateItem:
    installed = SimpleNamespace(version=new, scope="global", sha256="a" * 64, verified=True)
    return UpdateItem(name, old, "updated", source="registry", installed=installed)


# --- update_output ------------------------------------------------------------------------------


@pytest.mark.parametrize("check, dry_run, extra", [(False, False, set()), (True, False, {"available"}),
                                                   (False, True, {"planned"}), (True, True, {"available", "planned"})])
def test_the_document_has_a_list_per_status(check: bool, dry_run: bool, extra: set) -> None:
    output = update_output(report(), check=check, dry_run=dry_run)
    assert output.data == {"updated": [], "unchanged": [], "pinned": [], "failed": [], "activations": [],
                           **{key: [] for key in extra}}
    assert output.error is None and render(output) == ["nothing installed to update"]


def test_each_item_lands_in_its_list_and_its_row() -> None:
    error = PkgmgrError("gone-ext: registry acme does not list it\nmore", code="not_found")
    items = [
        updated("a-ext", "1.0.0", "1.1.0"),
        UpdateItem("b-ext", "1.0.0", "unchanged", source="path", reason="a path install is not updatable"),
        UpdateItem("c-ext", "1.0.0", "pinned", source="registry", target="2.0.0", reason="pinned"),
        UpdateItem("d-ext", "1.0.0", "failed", error=error),
        UpdateItem("e-ext", "1.0.0", "available", source="registry", target="1.2.0"),
    ]
    output = update_output(report(*items), check=True, dry_run=False)
    assert [i["name"] for i in output.data["updated"]] == ["a-ext"]
    assert output.data["updated"][0] == {"name": "a-ext", "version": "1.1.0", "previous_version": "1.0.0",
                                         "source": "registry", "scope": "global", "sha256": "a" * 64,
                                         "verified": True}
    assert [i["name"] for i in output.data["unchanged"]] == ["b-ext"]
    assert [i["name"] for i in output.data["pinned"]] == ["c-ext"]
    assert output.data["failed"] == [{"name": "d-ext", "version": "1.0.0", "error": error.to_json()}]
    assert output.data["available"] == [{"name": "e-ext", "version": "1.0.0", "source": "registry",
                                         "latest": "1.2.0"}]
    assert output.error is error  # the first failure is the command's error
    rows = [line.split(None, 4) for line in render(output)]
    assert rows[0] == ["NAME", "INSTALLED", "NEWEST", "STATUS", "NOTE"]
    assert rows[1] == ["a-ext", "1.0.0", "1.1.0", "updated"]
    assert rows[2] == ["b-ext", "1.0.0", "-", "unchanged", "a path install is not updatable"]
    assert rows[3] == ["c-ext", "1.0.0", "2.0.0", "pinned", "pinned"]
    assert rows[4] == ["d-ext", "1.0.0", "-", "failed", "[not_found] gone-ext: registry acme does not list it"]
    assert rows[5][:4] == ["e-ext", "1.0.0", "1.2.0", "update"] and "update available" in render(output)[5]


def test_a_dry_run_lists_what_it_would_install() -> None:
    planned = UpdateItem("b-ext", "1.0.0", "planned", source="registry", target="2.0.0", summary=SUMMARY)
    output = update_output(report(planned), check=False, dry_run=True)
    assert output.data["planned"] == [{"name": "b-ext", "version": "1.0.0", "source": "registry",
                                       "latest": "2.0.0", "summary": SUMMARY}]
    lines = render(output)
    assert lines[1].split()[:4] == ["b-ext", "1.0.0", "2.0.0", "would"]
    assert lines[2:] == ["would install:", *summary_lines(SUMMARY)]


def test_activations_awaiting_confirmation_make_it_exit_8() -> None:
    output = update_output(report(updated("a-ext", "1.0.0", "1.1.0"), activations=[ACTIVATION]), check=False,
                           dry_run=False)
    assert output.data["activations"] == [ACTIVATION]
    assert output.error is not None and output.error.code == "confirmation_required"
    assert output.error.details["commands"] == ["pkgmgr bundle confirm act_0123456789abcdef --expected-version 2"]
    # the confirm command is printed once: in the error, not in the activation line too
    assert render(output)[-1] == ("activation act_0123456789abcdef a-ext:a-ext/default v2 awaiting_confirmation; "
                                  "the error below says how to confirm it")
    assert "pkgmgr bundle confirm act_0123456789abcdef --expected-version 2" in output.error.message


def test_a_failure_comes_before_a_confirmation() -> None:
    error = PkgmgrError("boom", code="network_error")
    failed = UpdateItem("d-ext", "1.0.0", "failed", error=error)
    output = update_output(report(failed, activations=[ACTIVATION]), check=False, dry_run=False)
    assert output.error is error


# --- update arguments ---------------------------------------------------------------------------


def test_update_needs_names_or_all_but_not_both(home: Path) -> None:
    document = fail("usage", "ext", "update", "a-ext", "--all")
    assert "not both" in document["error"]["message"]
    assert "hint: pkgmgr ext update --all --check" in human("ext", "update", code=2).stderr
    assert not home.exists()


def test_update_all_with_nothing_installed(home: Path) -> None:
    assert human("ext", "update", "--all", "--check").stdout == "nothing installed to update\n"
    assert ok("ext", "update", "--all")["updated"] == []


# --- info and search ----------------------------------------------------------------------------


@pytest.fixture
def local(tmp_path: Path) -> RegistryDir:
    """A directory registry `local` (priority 10) with a yanked, a prerelease and a too-new version."""
    regdir = RegistryDir(tmp_path / "index", "local")
    regdir.publish("demo-ext", "0.1.0", description="Demo tools for Linear", permissions=("session.read",))
    regdir.publish("demo-ext", "0.2.0", yanked=True)
    regdir.publish("demo-ext", "0.3.0", min_compozy_version="9.0.0")
    regdir.publish("demo-ext", "0.4.0-rc.1")
    regdir.publish("other-ext", "1.0.0", description="Something else")
    ok("registry", "add", "local", regdir.root, "--priority", "10")
    return regdir


def test_info_human_output(local: RegistryDir) -> None:
    lines = human("ext", "info", "demo-ext", env={"PKGMGR_HOST_VERSION": "1.0.0"}).stdout.splitlines()
    assert lines[0] == "name:        demo-ext"
    assert "description: Demo tools for Linear" in lines
    assert f"registry:    local ({local.root})" in lines
    assert "latest:      0.3.0" in lines  # neither yanked nor a prerelease (the host is not asked)
    table = lines[lines.index("") + 1:]
    assert table[0].split() == ["VERSION", "SIZE", "YANKED", "MIN", "HOST", "PERMISSIONS", "NETWORK", "DIGEST"]
    rows = {line.split()[0]: line for line in table[1:]}
    assert rows["0.1.0"].split()[2:] == ["0.5.0", "session.read", "-"]
    assert rows["0.2.0"].split()[2:4] == ["yes", "0.5.0"]
    assert "9.0.0 (too new)" in rows["0.3.0"]
    assert "0.4.0-rc.1 (pre)" in rows["0.4.0-rc.1"]


def test_info_json_marks_compatibility(local: RegistryDir) -> None:
    document = ok("ext", "info", "demo-ext", env={"PKGMGR_HOST_VERSION": "1.0.0"})
    assert {v["version"]: v["compatible"] for v in document["versions"]} == {
        "0.1.0": True, "0.2.0": True, "0.3.0": False, "0.4.0-rc.1": True}
    assert (document["registry"], document["tier"], document["verified"], document["vanished"]) == \
        ("local", "community", True, [])
    assert all(v["compatible"] for v in ok("ext", "info", "demo-ext")["versions"])  # no host configured


def test_info_from_a_named_registry(local: RegistryDir) -> None:
    assert ok("ext", "info", "demo-ext", "--registry", "local")["registry"] == "local"
    document = fail("not_found", "ext", "info", "demo-ext", "--registry", "default")
    assert "registry default does not list it" in document["error"]["message"]


def test_info_shows_a_version_that_vanished(local: RegistryDir) -> None:
    ok("ext", "info", "demo-ext")  # remembered: 0.1.0 ... 0.4.0-rc.1
    local.remove_version("demo-ext", "0.1.0")
    result = human("ext", "info", "demo-ext")
    assert "0.1.0: vanished from the registry (treated as yanked)" in result.stdout
    assert ok("ext", "info", "demo-ext")["vanished"] == ["0.1.0"]


def test_search_human_output(local: RegistryDir) -> None:
    lines = human("ext", "search", "linear").stdout.splitlines()
    assert lines[0].split() == ["NAME", "LATEST", "TIER", "REGISTRY", "DESCRIPTION"]
    assert lines[1].split() == ["demo-ext", "0.3.0", "community", "local", "Demo", "tools", "for", "Linear"]
    assert [line.split()[:4] for line in lines[2:]] == [["marketing-linear", "0.1.0", "official", "default"]]
    assert human("ext", "search", "no-such-thing").stdout == "no extension matches 'no-such-thing'\n"


def test_search_shows_a_name_from_the_registry_that_answers_for_it(local: RegistryDir, tmp_path: Path) -> None:
    shadow = RegistryDir(tmp_path / "shadow", "shadow")
    shadow.publish("demo-ext", "5.0.0", description="the shadow")
    ok("registry", "add", "shadow", shadow.root, "--priority", "20")
    results = {r["name"]: r for r in ok("ext", "search", "demo")["results"]}
    assert (results["demo-ext"]["registry"], results["demo-ext"]["latest"]) == ("local", "0.3.0")
    only = ok("ext", "search", "demo", "--registry", "shadow")["results"]
    assert [(r["name"], r["registry"], r["latest"]) for r in only] == [("demo-ext", "shadow", "5.0.0")]


def test_search_of_an_empty_registry_and_of_one_without_index(tmp_path: Path) -> None:
    empty = RegistryDir(tmp_path / "empty", "empty")
    ok("registry", "add", "empty", empty.root)
    assert human("ext", "search", "--registry", "empty").stdout == "the registries list no extensions\n"
    (empty.root / "index.json").unlink()
    result = human("ext", "search", "--registry", "empty")
    assert "warning: registry empty has no index.json; it cannot be searched" in result.stderr
    assert ok("ext", "search", "--registry", "empty")["results"] == []


# --- an update batch is all or nothing (SPEC 4 "ext install": update follows the same rule) -------


def test_an_update_batch_with_one_failure_updates_nothing(tmp_path: Path) -> None:
    regdir = RegistryDir(tmp_path / "index", "local")
    for name in ("a-ext", "b-ext"):
        regdir.publish(name, "1.0.0")
    ok("registry", "add", "local", regdir.root, "--priority", "10")
    ok("ext", "install", "a-ext", "b-ext")
    regdir.publish("a-ext", "1.1.0")
    regdir.publish("b-ext", "1.1.0", sha256="0" * 64)  # its download fails verification
    document = fail("checksum_mismatch", "ext", "update", "--all")
    assert [i["name"] for i in document["failed"]] == ["b-ext"] and document["updated"] == []
    (held,) = document["skipped"]
    assert held["name"] == "a-ext" and "nothing was installed" in held["reason"]
    assert {e["name"]: e["version"] for e in ok("ext", "list")["extensions"]} == {"a-ext": "1.0.0", "b-ext": "1.0.0"}
