"""Activations follow the store's version switch (SPEC 9.3 "On update"), in the switching
transaction: versions of one extension are built in tmp_path and installed in sequence with
`ext install DIR --allow-unverified --yes`."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import (
    FULL_RESOURCES,
    NAME,
    OPS_DIGEST,
    activate,
    cli,
    fail,
    install,
    installed,
    make_ext,
    network_digest_of,
    ok,
    profile,
    resources,
    state,
)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    return tmp_path / "src"


@pytest.fixture
def active(src: Path, home: Path) -> str:
    """crew-ext 0.1.0 installed and its default profile active and confirmed (by alice)."""
    make_ext(src, version="0.1.0")
    installed(src)
    return activate(NAME, "--confirm-network-requirement", OPS_DIGEST, "--as", "alice")["activation"]["id"]


def show(act: str) -> dict:
    return ok("bundle", "show", act)["activation"]


def installed_version(home: Path) -> str:
    return ok("ext", "list")["extensions"][0]["version"]


def test_an_unchanged_projection_keeps_the_activation_version(active: str, src: Path, home: Path) -> None:
    before = show(active)
    make_ext(src, version="0.2.0", files={"README.md": "only the docs changed\n"})
    document = installed(src)
    (entry,) = document["activations"]
    assert entry["id"] == active and entry["change"] == "unchanged"
    after = show(active)
    assert after["version"] == 1 and after["extension_version"] == "0.2.0"
    assert after["activation_digest"] == before["activation_digest"]
    assert {k: v for k, v in after.items() if k != "extension_version"} == \
        {k: v for k, v in before.items() if k != "extension_version"}
    assert resources(home) == FULL_RESOURCES


def test_changed_content_without_network_change_is_reprojected(active: str, src: Path, home: Path) -> None:
    before = ok("bundle", "show", active)
    make_ext(src, version="0.2.0", files={"agents/planner/SOUL.md": "# Soul\n\nA new voice.\n"})
    document = installed(src)
    assert [(a["change"], a["status"], a["version"]) for a in document["activations"]] == [("updated", "active", 2)]
    after = ok("bundle", "show", active)
    activation = after["activation"]
    assert activation["version"] == 2 and activation["status"] == "active"
    assert activation["activation_digest"] != before["activation"]["activation_digest"]
    # the confirmation of the unchanged network digest carries over, naming the version confirmed
    assert (activation["confirmed_digest"], activation["confirmed_version"], activation["confirmed_by"]) == \
        (OPS_DIGEST, 1, "alice")
    digests = {(r["kind"], r["name"]): r["digest"] for r in after["resources"]}
    old = {(r["kind"], r["name"]): r["digest"] for r in before["resources"]}
    assert sorted(digests) == FULL_RESOURCES
    assert [key for key in digests if digests[key] != old[key]] == [("agent.soul", "planner")]
    ok("doctor", "--check")


def test_the_full_reconfirmation_story(active: str, src: Path, home: Path) -> None:
    # 0.2.0: same projection
    make_ext(src, version="0.2.0", files={"CHANGELOG.md": "nothing visible\n"})
    installed(src)
    assert (show(active)["version"], show(active)["extension_version"]) == (1, "0.2.0")

    # 0.3.0: channel_scopes change -> version 2, awaiting, projection withdrawn, exit 8 listing it
    make_ext(src, version="0.3.0", scopes=("ops", "release"))
    result = install(src)
    assert result.code == 8, result
    document = result.json
    assert document["error"]["code"] == "confirmation_required"
    (entry,) = document["activations"]
    assert (entry["id"], entry["version"], entry["status"]) == (active, 2, "awaiting_confirmation")
    command = f"pkgmgr bundle confirm {active} --expected-version 2"
    assert document["error"]["details"]["commands"] == [command] and command in result.stderr
    assert [i["version"] for i in document["installed"]] == ["0.3.0"]
    new_digest = network_digest_of(["release", "ops"])
    awaiting = show(active)
    assert (awaiting["status"], awaiting["version"], awaiting["network_digest"]) == \
        ("awaiting_confirmation", 2, new_digest)
    assert (awaiting["confirmed_version"], awaiting["confirmed_digest"], awaiting["confirmed_by"]) == \
        (None, None, None)
    assert resources(home) == []
    assert installed_version(home) == "0.3.0"
    ok("doctor", "--check")

    # confirming what was read before the update is stale
    stale = fail("stale_version", 6, "bundle", "confirm", active, "--expected-version", "1")
    assert stale["error"]["details"]["current_version"] == 2
    assert resources(home) == []

    # confirming the current version activates and projects it
    confirmed = ok("bundle", "confirm", active, "--expected-version", "2", "--as", "bob")["activation"]
    assert (confirmed["status"], confirmed["version"], confirmed["confirmed_version"], confirmed["confirmed_digest"],
            confirmed["confirmed_by"]) == ("active", 2, 2, new_digest, "bob")
    assert resources(home) == FULL_RESOURCES
    ok("doctor", "--check")

    # 0.4.0: the profile is gone -> refused, nothing moves; then --deactivate-missing
    before = state(home)
    make_ext(src, version="0.4.0", scopes=("ops", "release"), profiles=[profile("renamed")])
    fail("bundle_missing", 6, "ext", "install", src, "--allow-unverified", "--yes")
    assert state(home) == before and installed_version(home) == "0.3.0"
    assert [a["change"] for a in installed(src, "--deactivate-missing")["activations"]] == ["deactivated"]
    assert installed_version(home) == "0.4.0" and state(home)["activations"] == [] and resources(home) == []


def test_a_missing_profile_refuses_the_update_and_moves_nothing(active: str, src: Path, home: Path) -> None:
    before = state(home)
    (old_dir,) = (home / "extensions" / NAME).iterdir()
    make_ext(src, version="0.4.0", profiles=[profile("other")])
    result = install(src)
    assert result.code == 6, result
    assert result.json["error"]["code"] == "bundle_missing"
    assert "--deactivate-missing" in result.stderr
    assert state(home) == before
    assert installed_version(home) == "0.1.0" and show(active)["status"] == "active"
    assert old_dir.is_dir() and resources(home) == FULL_RESOURCES

    document = installed(src, "--deactivate-missing")
    (entry,) = document["activations"]
    assert (entry["id"], entry["status"]) == (active, "deactivated")
    assert installed_version(home) == "0.4.0"
    assert state(home)["activations"] == [] and resources(home) == []
    fail("not_found", 5, "bundle", "show", active)
    ok("doctor", "--check")


def test_a_dry_run_foresees_a_missing_profile(active: str, src: Path, home: Path) -> None:
    make_ext(src, version="0.4.0", profiles=[profile("other")])
    before = state(home)
    fail("bundle_missing", 6, "ext", "install", src, "--allow-unverified", "--yes", "--dry-run")
    planned = ok("ext", "install", src, "--allow-unverified", "--yes", "--dry-run", "--deactivate-missing")["planned"]
    assert [(p["name"], p["version"]) for p in planned] == [(NAME, "0.4.0")]
    assert state(home) == before and show(active)["status"] == "active"


def test_a_missing_bundle_is_missing_too(active: str, src: Path, home: Path) -> None:
    make_ext(src, version="0.4.0", bundle_name="renamed")
    before = state(home)
    fail("bundle_missing", 6, "ext", "install", src, "--allow-unverified", "--yes")
    assert state(home) == before


def test_a_refused_update_leaves_no_version_directory(active: str, src: Path, home: Path) -> None:
    make_ext(src, version="0.4.0", profiles=[profile("other")])
    assert install(src).code == 6
    assert [p.name for p in (home / "extensions" / NAME).iterdir()] == ["0.1.0"]


def test_policy_confirm_always_needs_confirmation_of_any_change(active: str, src: Path, home: Path) -> None:
    (home / "config.toml").write_text('[policy]\nconfirm = "always"\n', encoding="utf-8")
    make_ext(src, version="0.2.0", files={"README.md": "docs only\n"})
    installed(src)  # an unchanged projection needs nothing
    assert show(active)["status"] == "active"

    make_ext(src, version="0.3.0", files={"agents/planner/SOUL.md": "# Soul\n\nChanged.\n"})
    result = install(src)
    assert result.code == 8, result
    awaiting = show(active)
    assert (awaiting["status"], awaiting["version"], awaiting["network_digest"]) == \
        ("awaiting_confirmation", 2, OPS_DIGEST)
    assert awaiting["confirmed_digest"] is None and resources(home) == []
    ok("bundle", "confirm", active, "--expected-version", "2")
    assert resources(home) == FULL_RESOURCES


def test_policy_confirm_always_applies_without_network_requirement(src: Path, home: Path) -> None:
    make_ext(src, version="0.1.0", scopes=None)
    installed(src)
    act = activate()["activation"]["id"]
    (home / "config.toml").write_text('[policy]\nconfirm = "always"\n', encoding="utf-8")
    make_ext(src, version="0.2.0", scopes=None, profiles=[profile(channels=("ops", "launch"))])
    result = install(src)
    assert result.code == 8, result
    assert "policy confirm" in result.stderr
    assert show(act)["status"] == "awaiting_confirmation" and resources(home) == []
    assert ok("bundle", "confirm", act, "--expected-version", "2")["activation"]["status"] == "active"
    assert ("channel", "launch") in resources(home)


def test_a_network_requirement_dropped_by_an_update_activates_an_awaiting_activation(src: Path, home: Path) -> None:
    make_ext(src, version="0.1.0")
    installed(src)
    act = fail("confirmation_required", 8, "bundle", "activate", NAME)["activation"]["id"]
    make_ext(src, version="0.2.0", scopes=None)
    document = installed(src)
    assert [(a["id"], a["status"], a["version"]) for a in document["activations"]] == [(act, "active", 2)]
    assert resources(home) == FULL_RESOURCES
    ok("doctor", "--check")


def test_a_network_requirement_that_returns_needs_confirmation_again(active: str, src: Path, home: Path) -> None:
    # SPEC 9.3: a network digest *changed to a non-empty value* clears the confirmation, even
    # when it is the value confirmed before the requirement was dropped in between
    make_ext(src, version="0.2.0", scopes=None)
    installed(src)
    dropped = show(active)
    assert (dropped["status"], dropped["version"], dropped["network_digest"]) == ("active", 2, "")
    make_ext(src, version="0.3.0")
    result = install(src)
    assert result.code == 8, result
    back = show(active)
    assert (back["status"], back["version"], back["network_digest"]) == ("awaiting_confirmation", 3, OPS_DIGEST)
    assert back["confirmed_digest"] is None and resources(home) == []
    ok("bundle", "confirm", active, "--expected-version", "3")
    assert resources(home) == FULL_RESOURCES


def test_an_awaiting_activation_stays_awaiting_through_a_content_change(src: Path, home: Path) -> None:
    make_ext(src, version="0.1.0")
    installed(src)
    act = fail("confirmation_required", 8, "bundle", "activate", NAME)["activation"]["id"]
    make_ext(src, version="0.2.0", files={"agents/planner/SOUL.md": "# Soul\n\nOther.\n"})
    assert install(src).code == 8
    assert (show(act)["status"], show(act)["version"]) == ("awaiting_confirmation", 2)
    assert resources(home) == []


def test_an_update_that_creates_a_conflict_is_refused(active: str, src: Path, tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "other", name="other-ext", scopes=None, agents=("writer",),
             profiles=[profile(agents=("writer",), layouts=())])
    installed(tmp_path / "other")
    activate("other-ext")
    before = state(home)
    make_ext(src, version="0.2.0", agents=("planner", "writer"), profiles=[profile(agents=("planner", "writer"))])
    fail("agent_conflict", 6, "ext", "install", src, "--allow-unverified", "--yes")
    assert state(home) == before


def test_agents_moved_between_activations_of_the_updated_extension_do_not_conflict(src: Path, home: Path) -> None:
    """Conflicts are judged against what the update leaves projected: agents that swap profiles
    (each profile active) conflict with nobody afterwards, whatever order the refresh takes."""
    def build(version: str, first: str, second: str) -> None:
        make_ext(src, version=version, scopes=None, agents=("x", "y"),
                 profiles=[profile("a", agents=(first,), layouts=()), profile("b", agents=(second,), layouts=())])

    build("0.1.0", "x", "y")
    installed(src)
    acts = {p: activate(f"{NAME}:crew/{p}")["activation"]["id"] for p in ("a", "b")}
    build("0.2.0", "y", "x")
    document = installed(src)
    assert sorted((a["id"], a["change"], a["status"]) for a in document["activations"]) == \
        sorted((act, "updated", "active") for act in acts.values())
    assert resources(home, activation=acts["a"])[0] == ("agent", "y")
    assert resources(home, activation=acts["b"])[0] == ("agent", "x")
    # a real conflict between two activations of the new version is still refused
    before = state(home)
    build("0.3.0", "x", "x")
    fail("agent_conflict", 6, "ext", "install", src, "--allow-unverified", "--yes")
    assert state(home) == before


# --- remove / disable guards --------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["remove", "disable"])
def test_remove_and_disable_are_refused_while_activations_exist(verb: str, active: str, home: Path) -> None:
    before = state(home)
    document = fail("extension_has_active_bundles", 6, "ext", verb, NAME)
    assert [a["id"] for a in document["error"]["details"]["activations"]] == [active]
    assert "--deactivate" in document["stderr"]
    assert state(home) == before


@pytest.mark.parametrize("verb", ["remove", "disable"])
def test_deactivate_removes_them_in_the_same_transaction(verb: str, active: str, home: Path) -> None:
    document = ok("ext", verb, NAME, "--deactivate")
    assert [a["id"] for a in document["deactivated"]] == [active]
    assert state(home)["activations"] == [] and resources(home) == []
    ok("doctor", "--check")


def test_a_failing_removal_keeps_the_activation(active: str, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard deletes inside the removal's transaction: a failure after it rolls back both."""
    import pkgmgr.store.switch as store_install

    before = state(home)
    monkeypatch.setattr(store_install, "crashpoint", _raise_at("remove.before_commit"))
    result = cli("ext", "remove", NAME, "--deactivate")
    assert result.code != 0
    assert state(home) == before


def _raise_at(label: str):
    def crashpoint(name: str) -> None:
        if name == label:
            raise RuntimeError(f"injected failure at {label}")
    return crashpoint


# --- a batch commits in one transaction (SPEC 4 "ext install") -------------------------------------


def _trees(home: Path, name: str) -> list[Path]:
    return [p for p in home.rglob(f"extensions/{name}/*")]


def test_a_batch_whose_second_refresh_conflicts_installs_neither(active: str, src: Path, tmp_path: Path,
                                                                 home: Path) -> None:
    """The first ref is new and fine; the second's activation refresh raises agent_conflict in
    the batch's one transaction: neither is installed, no tree of either is left (python-tuf's
    "nothing moved")."""
    make_ext(tmp_path / "other", name="other-ext", scopes=None, agents=("writer",),
             profiles=[profile(agents=("writer",), layouts=())])
    installed(tmp_path / "other")
    activate("other-ext")
    make_ext(tmp_path / "third", name="third-ext", scopes=None, with_bundle=False)
    make_ext(src, version="0.2.0", agents=("planner", "writer"), profiles=[profile(agents=("planner", "writer"))])
    before, trees = state(home), sorted(_trees(home, NAME))
    document = fail("agent_conflict", 6, "ext", "install", tmp_path / "third", src, "--allow-unverified", "--yes")
    assert state(home) == before
    assert _trees(home, "third-ext") == [] and sorted(_trees(home, NAME)) == trees
    assert [s["name"] for s in document["skipped"]] == ["third-ext"]
    # --keep-going keeps the old behaviour: the one that succeeds is installed
    cli("ext", "install", tmp_path / "third", src, "--allow-unverified", "--yes", "--keep-going")
    listed = {e["name"]: e["version"] for e in ok("ext", "list")["extensions"]}
    assert listed == {"other-ext": "0.1.0", "third-ext": "0.1.0", NAME: "0.1.0"}


@pytest.mark.parametrize("label", ["install.after_rename", "install.before_commit"])
def test_a_failure_between_the_renames_and_the_commit_leaves_the_old_state_for_both(
        label: str, active: str, src: Path, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pkgmgr.store.switch as store_install

    make_ext(tmp_path / "third", name="third-ext", scopes=None, with_bundle=False)
    make_ext(src, version="0.2.0", files={"README.md": "only the docs changed\n"})
    before, trees = state(home), sorted(_trees(home, NAME))
    hits: list[str] = []

    def crashpoint(name: str) -> None:
        hits.append(name)
        if name == label and (label != "install.after_rename" or hits.count(name) == 2):
            raise RuntimeError(f"injected failure at {label}")

    monkeypatch.setattr(store_install, "crashpoint", crashpoint)
    result = cli("ext", "install", tmp_path / "third", src, "--allow-unverified", "--yes")
    assert result.code != 0
    assert hits.count("install.after_rename") == 2 and "install.after_commit" not in hits
    assert state(home) == before
    assert _trees(home, "third-ext") == [] and sorted(_trees(home, NAME)) == trees
    monkeypatch.setattr(store_install, "crashpoint", lambda name: None)
    document = ok("ext", "install", tmp_path / "third", src, "--allow-unverified", "--yes")
    assert sorted(r["name"] for r in document["installed"]) == sorted(["third-ext", NAME])
