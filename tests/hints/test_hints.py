"""Hints that work (SPEC 11): every message that suggests a command or an option is in the
catalogue below, found from the code (`tests.hints.sites`: a new hint without an entry fails
`test_every_hint_is_in_the_catalogue`), and

- every command a hint names parses with pkgmgr's own parser: the command exists and takes the
  options shown (placeholders such as NAME filled in);
- an option a hint suggests on its own ("pass --x", "without --x") exists on every command that
  prints the hint: the commands its entry names, and every command a scenario runs, whatever it
  prints (`tests.hints.harness.assert_suggested_options_exist`, on each run);
- a hint with a scenario is printed in the state the scenario makes, and the command it names,
  run exactly as printed, does what the hint says (`tests/hints/scenarios.py`).

An entry without a scenario says why (`Static`: the state takes a fault a test does not make, or
the code is being rewritten elsewhere; `Text`: the literal is no suggestion, e.g. a completion
script).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pkgmgr.cli.app import UsageError, build_parser
from tests.hints import scenarios as s
from tests.hints.harness import H
from tests.hints.sites import commands_in, sites


@dataclass(frozen=True)
class Runs:
    """Tried by a scenario; `commands`: those that print an option-only hint."""

    scenario: Callable[[H], None]
    commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class Static:
    """Checked statically only, for `reason`; `commands` as for Runs."""

    reason: str
    commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class Text:
    """Not a suggestion to run."""

    reason: str


@dataclass(frozen=True)
class Mention:
    """Names a command (which must exist) without giving its arguments: what to use, not what to run."""

    reason: str
    commands: tuple[str, ...] = field(default=())


FAULT = "needs a fault this suite makes elsewhere (tests/reliability, tests/store): a damaged or foreign state.db"
MAINTAINER = "a registry maintainer's command, run on an index: tests/publish exercises it"

CATALOGUE: dict[tuple[str, str], Runs | Static | Text | Mention] = {}


def entry(module: str, template: str, value: Runs | Static | Text | Mention) -> None:
    CATALOGUE[(f"pkgmgr/{module}", template)] = value


# --- activation ---
entry("activation/confirmation.py", "pkgmgr{} bundle show {}", Runs(s.activate_then_show_and_confirm))
entry("activation/confirmation.py", "pkgmgr{} bundle confirm {} --expected-version {}",
      Runs(s.activate_then_show_and_confirm))
entry("activation/lifecycle.py", "'pkgmgr bundle list' shows the activations", Runs(s.show_an_unknown_activation))
entry("activation/lifecycle.py", "'pkgmgr ext enable {}' enables it", Runs(s.activate_a_disabled_extension))
entry("activation/lifecycle.py", "'pkgmgr ext verify {}' lists the changed files", Runs(s.confirm_after_the_tree_changed))
entry("activation/lifecycle.py", "'pkgmgr{} bundle deactivate {}'", Runs(s.remove_an_extension_with_activations))
entry("activation/lifecycle.py", "pass --deactivate to deactivate them in the same step, or first ",
      Runs(s.remove_an_extension_with_activations, ("ext remove", "ext disable")))
entry("activation/lifecycle.py", "pass --deactivate-missing to deactivate it as part of the update",
      Runs(s.update_that_drops_a_profile, ("ext install", "ext update", "sync")))
entry("activation/lifecycle.py", "'pkgmgr{} bundle preview {}:{}/{}' shows the requirement and its digest",
      Runs(s.activate_with_a_wrong_digest))
entry("activation/lifecycle.py", "{} is installed globally; an activation lives beside its install, so install it in "
      "the workspace too: 'pkgmgr{} ext install {}' (or the path or archive it came from)",
      Runs(s.activate_in_a_workspace_what_is_installed_globally))
# --- cli ---
entry("cli/app.py", next(t for m, t in sites() if m == "pkgmgr/cli/app.py" and t.lstrip().startswith("examples:")),
      Text("the top-level help's examples: tests/cli/test_app.py parses every example"))
entry("cli/bundle_cmds.py", "already activated; 'pkgmgr bundle show {}' shows it", Runs(s.preview_then_activate))
entry("cli/bundle_cmds.py", "pkgmgr{} bundle activate {}", Runs(s.preview_then_activate))
for template in ("complete -c pkgmgr -n '{}' -a '(pkgmgr completion names 2>/dev/null)'",):
    entry("cli/completion_cmds.py", template, Text("a completion script's own call of pkgmgr"))
for module, template in list(sites()):
    if module == "pkgmgr/cli/completion_cmds.py" and template.startswith("# pkgmgr completion for"):
        CATALOGUE[(module, template)] = Text("a completion script's header: how to load it")
entry("cli/context.py", "'pkgmgr {}' installs it into a new workspace here and declares it in pkgmgr.toml; "
      "--workspace DIR names an existing workspace", Runs(s.install_in_a_workspace_where_there_is_none))
entry("cli/app.py", "run '{} --help' for its options", Runs(s.an_unknown_option))
entry("cli/app.py", "run '{} --help' for usage", Runs(s.a_missing_argument))
entry("cli/help_cmds.py", "run '{} --help' for its commands", Runs(s.help_man_with_a_command))
entry("cli/context.py", "a workspace is a folder holding pkgmgr.toml: create one in {} (empty will do) to make it "
      "one, or name a workspace with --workspace DIR",
      Runs(s.workspace_command_outside_a_workspace, ("bundle activate", "ext install")))
entry("lifecycle.py", "'pkgmgr ext list' shows what is installed, 'pkgmgr ext search {}' what the registries offer",
      Runs(s.status_of_a_name_not_installed))
entry("cli/ext_switch_cmds.py", "pinned at {}: 'pkgmgr ext update {} --unpin' lets updates move it again",
      Runs(s.rollback_then_unpin))
entry("lifecycle.py", "'pkgmgr ext info {}' lists the versions a registry has; 'pkgmgr ext install {}@VERSION --pin' "
      "installs one and holds it", Runs(s.rollback_with_nothing_kept))
entry("cli/ext_switch_cmds.py", "edits in {} show as they are; 'pkgmgr ext unlink {}' {}", Runs(s.link_then_unlink))
entry("store/switch.py", "'pkgmgr ext unlink {}' removes the link{}", Runs(s.link_then_unlink))
entry("cli/ext_cmds.py", "name the extensions to verify, or pass --all", Runs(s.verify_without_names, ("ext verify",)))
entry("cli/ext_cmds.py", "pkgmgr.lock was not updated: the workspace holds declared extensions not installed yet; "
      "'pkgmgr sync' installs them and updates it", Runs(s.save_while_declared_extensions_are_not_installed))
entry("cli/ext_remote_cmds.py", "--exit-code goes with --check", Runs(s.update_usage, ("ext update",)))
entry("cli/ext_remote_cmds.py", "name extensions or pass --all, not both", Runs(s.update_usage, ("ext update",)))
entry("cli/ext_remote_cmds.py", "name the extensions to update, or pass --all", Runs(s.update_usage, ("ext update",)))
entry("cli/ext_remote_cmds.py", "pkgmgr ext update --all --check", Runs(s.update_usage))
entry("cli/ext_remote_cmds.py", "pkgmgr ext update --all --check --exit-code", Runs(s.update_usage))
entry("cli/workspace_cmds.py", "pkgmgr trust --digest {}", Runs(s.trust_show_then_digest))
entry("cli/workspace_cmds.py", "review them again with 'pkgmgr trust --show'", Runs(s.trust_with_a_digest_that_changed))
entry("cli/workspace_registries.py", "the registries declared in {} are not used until you approve them "
      "('pkgmgr trust --show')", Runs(s.declared_registries_before_trust))
entry("cli/manpage.py", "'pkgmgr {}'", Text("the manual names the top-level aliases"))
entry("cli/manpage.py", " are the commands of the same name of 'pkgmgr ext'; 'pkgmgr ext add' is "
      "'pkgmgr ext install --save'.", Text("the manual's description of the aliases"))
# --- install ---
entry("install/pipeline.py", "{} {} is already installed; 'pkgmgr ext update {}' moves it to a newer version",
      Runs(s.install_what_is_installed))
entry("install/pipeline.py", "pass --allow-unverified to install it anyway",
      Runs(s.install_unverified_without_consent, ("ext install", "ext update")))
entry("install/pipeline.py", "pass --yes together with --allow-unverified",
      Runs(s.install_unverified_without_consent, ("ext install", "ext update")))
entry("install/pipeline.py", "{} not installed: {} failed, so nothing was installed (--keep-going installs the refs "
      "that succeed)", Runs(s.install_several_when_one_fails, ("ext install",)))
entry("install/plan.py", "an extension's root holds extension.toml (or extension.json); 'pkgmgr ext new NAME' "
      "creates one", Runs(s.install_a_folder_that_is_no_extension))
entry("hosts/compozy.py", "review them and pass --allow-grants to accept",
      Runs(s.install_with_grants, ("ext install", "ext update", "sync")))
# --- registry ---
entry("registry/client.py", "'pkgmgr ext search' lists what the registries offer", Runs(s.install_an_unknown_name))
entry("registry/client.py", "'pkgmgr registry list' shows the configured registries",
      Runs(s.install_from_an_unknown_registry))
entry("registry/configure.py", "'pkgmgr registry list' shows the configured registries",
      Runs(s.remove_an_unknown_registry))
entry("registry/configure.py", "check the source, or 'pkgmgr registry add {} {} --no-check' to record it anyway",
      Runs(s.add_a_registry_that_cannot_be_read))
entry("registry/configure.py", "'pkgmgr registry remove {}' first to replace it", Runs(s.add_a_registry_name_taken))
# --- store ---
entry("store/switch.py", "pass --force to replace it", Runs(s.install_from_another_source, ("ext install", "sync")))
entry("store/verify.py", "reinstall it with 'pkgmgr ext install {} --force --allow-unverified'",
      Runs(s.verify_a_modified_tree))
entry("store/verify.py", "reinstall it with 'pkgmgr ext install {} --force'", Runs(s.verify_a_modified_tree))
# --- workspace ---
entry("workspace/declaration.py", "start one with 'pkgmgr ext install NAME --save' (or write [extensions] NAME = "
      "\"SPEC\"); --workspace DIR names another workspace", Runs(s.sync_without_pkgmgr_toml))
entry("workspace/lockfile.py", "# Generated by `pkgmgr sync`: the exact extensions of this workspace. Do not edit by "
      "hand.\n", Text("the lock's header"))
entry("workspace/resolve.py", "if {} was changed by hand or by a merge, 'git checkout {}' restores it; if the registry "
      "changed what it publishes as {} {}, review that, then 'pkgmgr sync --upgrade {}' locks what it lists now",
      Runs(s.a_lock_whose_checksum_the_registry_does_not_list))
entry("workspace/resolve.py", "run 'pkgmgr sync' (without --frozen) to update the lock",
      Runs(s.frozen_with_a_declaration_missing_from_the_lock))
entry("workspace/sync.py", "run 'pkgmgr sync' (without --frozen) to update the lock",
      Runs(s.frozen_with_a_lock_that_lists_more))
entry("workspace/sync.py", "run 'pkgmgr sync' to update the lock, then commit it", Runs(s.locked_when_the_lock_is_stale))
entry("workspace/sync.py", "run 'pkgmgr sync' to update the lock", Runs(s.locked_with_a_lock_written_by_hand))
entry("workspace/sync.py", "declare them first (e.g. 'pkgmgr ext install NAME --save')",
      Runs(s.upgrade_a_name_not_declared))
entry("workspace/store.py", "{} was left by an earlier pkgmgr and is ignored (the workspace's store is outside the "
      "work tree now); 'pkgmgr doctor' says how to delete it", Runs(s.a_store_left_in_the_work_tree))
entry("workspace/workspace.py", "review it with 'pkgmgr trust --show --workspace {}', then approve it with "
      "'pkgmgr trust'", Runs(s.trust_show_then_digest))

# --- the registry hints of cli/app.py (SPEC 11), and the others that get past a registry ---
entry("cli/app.py", "'--offline' uses what is cached", Runs(s.a_configured_registry_that_is_down, ("ext info",)))
entry("cli/app.py", "'--registry NAME' asks another registry ({})",
      Runs(s.a_configured_registry_that_is_down, ("ext install",)))
entry("cli/app.py", "'pkgmgr registry remove {}' drops it", Runs(s.a_github_registry_that_is_gone))
entry("cli/app.py", "it is declared in pkgmgr.toml: removing it from [registries] there (approved with "
      "'pkgmgr trust') does without it", Runs(s.a_declared_registry_that_is_down))
entry("cli/app.py", "run 'pkgmgr doctor --check' to see which scope; restore it from a backup", Runs(s.a_damaged_state_db))
entry("cli/ext_remote_cmds.py", "'pkgmgr registry remove {}' drops it", Runs(s.search_with_a_registry_down))
entry("registry/plan.py", "pkgmgr ext install {} --registry {}", Runs(s.a_version_another_registry_has))
entry("registry/metadata_checks.py", "if the registry was really reset, 'pkgmgr registry remove {}' and add it again",
      Runs(s.a_registry_rolled_back))
entry("registry/metadata_checks.py", "ask its maintainers to publish a fresh registry.toml, or pass --allow-expired",
      Runs(s.an_expired_registry, ("ext install", "ext update", "ext info", "ext search", "sync")))
entry("registry/resolve.py", "name a version exactly, or pass --pre for prereleases",
      Runs(s.a_prerelease_only, ("ext install", "ext update", "sync")))
entry("registry/resolve.py", "prerelease (name it or pass --pre)", Static(
    "a NOTE of resolve's not_found listing skipped versions: a_prerelease_only shows --pre works",
    ("ext install", "ext update", "sync")))
entry("registry/client.py", "is the source a registry index? 'pkgmgr registry list' shows it",
      Runs(s.a_registry_source_that_is_no_index))
entry("registry/client.py", "add it again with its TUF root: 'pkgmgr registry remove {}', then 'pkgmgr registry add "
      "{} {} --root FILE'", Runs(s.require_signed_refuses_an_unsigned_registry))
entry("registry/configure.py", "add it with its TUF root: --root FILE or --root-sha256 HEX",
      Runs(s.require_signed_refuses_an_unsigned_registry, ("registry add",)))
entry("registry/trustroot.py", "pkgmgr registry add {} {} --root-sha256 {}{}",
      Runs(s.a_signed_registry_whose_trusted_root_is_lost))
entry("registry/configure.py", "to trust another root, run 'pkgmgr registry remove {}' first; {}",
      Runs(s.reestablish_a_trusted_root_with_another_root))
entry("registry/signed.py", "the maintainers must re-sign it ('pkgmgr registry sign')",
      Mention("the maintainers' command, on an index the user does not have"))
entry("registry/configure.py", "'pkgmgr registry remove {}' first to add it signed",
      Runs(s.add_signed_a_source_already_configured))
entry("net/http.py", "use https://, or add the registry with --insecure",
      Static("a plain http:// registry on a host other than loopback: tests reach only loopback", ("registry add",)))
# --- maintaining an index ---
entry("cli/registry_cmds.py", "--keys, --timestamp-expiry and --expiry apply with --sign",
      Runs(s.init_sign_then_add_and_publish, ("registry init",)))
entry("cli/registry_cmds.py", "pkgmgr registry add NAME SOURCE --root-sha256 {}",
      Runs(s.init_sign_then_add_and_publish))
entry("cli/registry_cmds.py", "pkgmgr registry publish ARCHIVE --index {}{}", Runs(s.init_sign_then_add_and_publish))
entry("cli/registry_cmds.py", "an index is signed from its start: 'pkgmgr registry init DIR --sign' creates one in an "
      "empty DIR, to publish the archives into", Runs(s.sign_an_unsigned_index))
entry("registry/signing.py", "an index is signed from its start: 'pkgmgr registry init DIR --sign' creates one in an "
      "empty DIR, to publish the archives into", Static("reading metadata an index lacks (registry rotate-key on an "
                                                        "unsigned index): sign_an_unsigned_index runs the command"))
entry("cli/registry_cmds.py", "name the registry index directory: DIR or --index DIR",
      Runs(s.publish_without_an_index, ("registry publish",)))
entry("cli/registry_cmds.py", "--push records the pushed artifact's URL; it cannot be combined with --url",
      Static("a usage refusal naming the two options of registry publish", ("registry publish",)))
entry("registry/init.py", "publish into it with 'pkgmgr registry publish ARCHIVE --index DIR', or choose an empty "
      "directory", Runs(s.init_into_an_index))
entry("registry/init.py", "A pkgmgr registry index. Change it with `pkgmgr registry publish`,",
      Mention("registry.toml's comment names the command"))
entry("registry/init.py", "`registry yank` and `registry unyank`; check it with `pkgmgr registry validate .`.",
      Runs(s.init_into_an_index))
for validate in (t for m, t in sites() if m == "pkgmgr/registry/init.py" and t.startswith("pkgmgr registry validate . --")):
    entry("registry/init.py", validate, Static("the CI workflow registry init writes (format 1: --base, format 2: "
                                               "--changed-since), run by GitHub: tests/publish/test_init.py checks it"))
entry("registry/publish.py", "create one with 'pkgmgr registry init {}'", Runs(s.publish_without_an_index))
entry("registry/publish.py", "{}: is a directory; pack it first with 'pkgmgr ext pack {}'", Runs(s.publish_without_an_index))
entry("registry/publish.py", "{}: the index has problems; fix them first ('pkgmgr registry validate {}' lists them)",
      Runs(s.publish_into_a_broken_index))
entry("registry/publish.py", "an archive to copy, or --url, is required",
      Static("registry publish with neither an archive nor --url", ("registry publish",)))
entry("registry/publish.py", "attach the archive built by 'pkgmgr ext pack' to the release",
      Mention("the author's step on GitHub: the command that builds the archive"))
entry("registry/validate_index.py", "missing: run 'pkgmgr registry build {}'", Runs(s.validate_an_index_out_of_step))
entry("registry/validate_index.py", "is not in sync with registry.toml and the entries (a publish interrupted, or an "
      "edit by hand): run 'pkgmgr registry build {}'", Runs(s.validate_an_index_out_of_step))
entry("registry/validate_index.py", "missing: every registry index has one (see 'pkgmgr registry init')",
      Mention("the command that writes the file"))
entry("registry/validate_index.py", "version {}, published at {}, disappeared ({}): a published version stays listed; "
      "yank it instead ('pkgmgr registry yank')", Mention("the command to use instead"))
entry("registry/validate_index.py", "is still {} although versions were added, removed, yanked or unyanked since {}: "
      "every such change raises it (pkgmgr registry publish/yank/unyank do)", Mention("the commands that raise it"))
entry("registry/signing.py", "is not signed (not a target of the signed metadata): run 'pkgmgr registry sign {}'",
      Runs(s.validate_a_signed_index_with_a_file_added_by_hand))
entry("registry/signing.py", "is not the file the signed metadata names ({}): run 'pkgmgr registry sign {}'",
      Runs(s.validate_a_signed_index_changed_by_hand))
entry("registry/signing.py", "use the keys directory the index was signed with (--keys DIR); after an interrupted "
      "'registry rotate-key', run it again (or put {} back as {}.key)",
      Runs(s.publish_with_keys_the_index_was_not_signed_with,
           ("registry publish", "registry build", "registry sign", "registry rotate-key")))
# --- a format-2 index, and the client's local search index (docs/registry-format.md) ---
entry("registry/publish.py", "would be {} MiB, over its {} MiB cap, which clients and 'registry validate' refuse; move "
      "the index to format 2: 'pkgmgr registry build {} --format 2'", Runs(s.publish_past_the_index_json_cap))
entry("registry/validate_index.py", "is not in sync with the entries of its shard (a publish interrupted, or an edit "
      "by hand): run 'pkgmgr registry build {}'", Runs(s.validate_a_format_2_index_out_of_step))
entry("registry/validate_index.py", "is not in sync with registry.toml's serial and the summary shards: run "
      "'pkgmgr registry build {}'", Runs(s.validate_a_format_2_index_out_of_step))
entry("registry/shard_walk.py", "the entry of {} belongs at {} (format 2 shards entries by the sha256 of the name): "
      "move it there, then run 'pkgmgr registry build {}'", Runs(s.validate_a_misplaced_entry))
entry("registry/validate_index.py", "an interrupted change of the index is pending: run 'pkgmgr registry doctor {}' "
      "to settle it", Runs(s.validate_an_interrupted_change))
entry("registry/switch.py", "remove {}, restore the index from its git history, then run 'pkgmgr registry build {}'",
      Runs(s.a_change_that_cannot_be_completed))
entry("registry/search_index.py", "try again; 'pkgmgr cache clean' removes the local index, which is rebuilt from the "
      "registry", Runs(s.search_with_a_damaged_local_index))
entry("registry/search_index.py", "its maintainers rebuild it with 'pkgmgr registry build DIR'",
      Runs(s.search_a_registry_without_its_shard_list))
for template in ("choose a directory outside the index with --keys", "pass the keys directory with --keys DIR or "
                 "PKGMGR_SIGNING_KEYS", "use the keys directory the index was signed with (--keys DIR)"):
    entry("registry/signing.py", template, Static(MAINTAINER, ("registry sign", "registry init", "registry publish")))
entry("net/oci.py", "--push {}: only .tar.gz archives are pushed (the artifact's layer is {}); pack the extension with "
      "'pkgmgr ext pack DIR'", Static("a push to an OCI registry, which not every machine has (tests/net/test_oci_cli.py skips without)"))
entry("net/github.py", "choose one with --asset NAME",
      Static("a GitHub release with several archives (ambiguous_asset: tests/net/test_github.py)",
             ("ext install", "ext update")))
for template in ("pass --pre to consider prereleases", "pass --pre to install a prerelease"):
    entry("net/github.py", template, Static("a GitHub repository whose releases are prereleases: tests/net",
                                            ("ext install", "ext update")))
# --- authoring, help ---
entry("cli/ext_cmds.py", "next: pkgmgr ext validate {}", Runs(s.new_extension_and_its_readme))
entry("lifecycle.py", "choose another NAME or --path DIR", Runs(s.new_extension_and_its_readme, ("ext new",)))
entry("hosts/compozy_templates.py", next(t for m, t in sites() if m == "pkgmgr/hosts/compozy_templates.py"
                                         and t.startswith("# {name}")), Runs(s.new_extension_and_its_readme))
entry("hosts/compozy_templates.py", next(t for m, t in sites() if m == "pkgmgr/hosts/compozy_templates.py"
                                         and "Bundles are activated" in t), Runs(s.new_extension_and_its_readme))
entry("hosts/eva.py", "# {}\n\nAn Eva extension: 'pkgmgr ext pack . --release 0.1.0' makes its archive.\n",
      Runs(s.new_eva_extension_and_its_readme))
entry("cli/help_cmds.py", "run 'pkgmgr help --man' for the whole page", Runs(s.help_man_with_a_command))
entry("lifecycle.py", next(t for m, t in sites() if m == "pkgmgr/lifecycle.py" and t.startswith("\nNext, from this folder")),
      Runs(s.every_hosts_scaffold_readme_runs_as_written))
# --- doctor and the state of the scopes ---
entry("doctor.py", "'pkgmgr ext install", Mention("the start of store.verify's reinstall hint, which doctor_finds_a_"
                                                  "modified_tree runs"))
entry("doctor.py", "'pkgmgr --scope workspace ext install", Mention("the start of the same hint in a workspace, "
                                                                    "which doctor_finds_a_modified_tree runs"))
entry("cli/ext_cmds.py", "'pkgmgr ext install", Mention("the start of store.verify's reinstall hint, which "
                                                       "verify_a_modified_tree runs in a workspace"))
entry("cli/ext_cmds.py", "'pkgmgr --scope workspace ext install", Mention("the same hint for a workspace install, which "
                                                                        "verify_a_modified_tree runs"))
entry("doctor.py", "run 'pkgmgr doctor' to repair what can be repaired", Runs(s.doctor_check_finds_leftovers))
entry("store/recovery.py", "{} is not named by state.db: left in place (run 'pkgmgr doctor --rebuild' to record it, or "
      "remove it by hand)", Runs(s.a_tree_state_db_does_not_name))
entry("store/recovery.py", "{} (run 'pkgmgr ext verify {}' for the files)", Runs(s.doctor_finds_a_modified_tree))
entry("store/switch.py", "run 'pkgmgr doctor --check' to list them; 'pkgmgr doctor --rebuild' records one, or remove "
      "them by hand", Static(FAULT))
entry("store/db.py", "run 'pkgmgr doctor --check' to inspect the scope", Static(FAULT))
entry("store/db.py", "restore state.db from a backup, or run 'pkgmgr doctor --rebuild' to record the trees found "
      "(provenance unknown)", Static(FAULT))
entry("store/db.py", "run 'pkgmgr doctor --check' to list the damage; reinstalling the extension rewrites its row",
      Static(FAULT))
entry("cli/ext_cmds.py", "pkgmgr.lock was not updated: {}; 'pkgmgr sync' updates it",
      Static("--save while the lock cannot be resolved (a registry down): sync then fails the same way until it is up"))
# --- the other hosts (SPEC 13) ---
entry("lifecycle.py", "'pkgmgr ext list --host {}' shows what pkgmgr manages for it", Runs(s.a_name_a_host_does_not_hold))
entry("lifecycle.py", "{} is installed for several hosts ({}); say which with --host",
      Runs(s.a_name_two_hosts_hold, ("ext status", "ext remove", "ext enable", "ext disable", "ext verify")))
entry("hosts/detect.py", " or --host ", Runs(s.a_tree_with_the_manifests_of_two_hosts,
                                            ("ext validate", "ext pack", "ext install")))
entry("hosts/detect.py", "holds the manifests of two hosts: {}; pass --host to pick one",
      Runs(s.a_tree_with_the_manifests_of_two_hosts, ("ext validate", "ext pack", "ext install")))
entry("hosts/detect.py", "no extension manifest of {} here (--host {}; found: {})",
      Runs(s.a_tree_with_the_manifests_of_two_hosts, ("ext validate", "ext pack", "ext install")))
entry("hosts/eva.py", "Eva will ask again before loading this folder (/trust-extensions); pass --approve-host-trust "
      "to record the new hash in ~/.eva/trust.json", Runs(s.eva_project_folder_changed, ("ext install", "ext update",
                                                                                   "sync", "ext remove")))
entry("hosts/eva.py", "updated Eva's approval in {} (--approve-host-trust), covering {}",
      Text("what --approve-host-trust did"))
entry("hosts/eva.py", "  approved as you named them (--approve-host-trust=all), not installed by pkgmgr: {}",
      Text("what --approve-host-trust=all approved"))
entry("hosts/eva.py", "Eva will ask again before loading this folder (/trust-extensions); it holds scripts pkgmgr did "
      "not install ({}): review them, then run the command again with --approve-host-trust=all to record the new hash "
      "in ~/.eva/trust.json", Runs(s.eva_project_folder_holds_a_foreign_script, ("ext install", "ext update",
                                                                                     "sync")))
entry("hosts/approval.py", "review {}; then run the same command with --approve-host-trust=all to approve every file "
      "listed, or without --approve-host-trust to leave {}'s approval as it is",
      Runs(s.eva_project_folder_holds_a_foreign_script,
           ("ext install", "ext update", "ext remove", "ext enable", "ext disable", "sync")))
entry("hosts/folder.py", "{}: its tree differs from the installed one (run 'pkgmgr ext verify {} --host {}' for the files)",
      Runs(s.doctor_sees_a_host_tree_modified_and_missing))
entry("hosts/folder.py", "{}: {} is missing (install it again, or forget it: 'pkgmgr ext remove {} --host {}')",
      Runs(s.doctor_sees_a_host_tree_modified_and_missing))
entry("hosts/vera.py", "{} is a stale lock of Vera's records ({}): 'pkgmgr doctor' removes it",
      Runs(s.doctor_reclaims_a_stale_vera_lock))
entry("hosts/facts.py", "{}: {} archive names its version in its top directory (<name>-<version>/, as "
      "'pkgmgr ext pack --release VERSION' writes it)", Mention("how such an archive is made"))
entry("hosts/folder.py", "'pkgmgr adopt --host {} {}' takes it under management; --force replaces it",
      Runs(s.install_over_a_hand_installed_extension, ("ext install",)))
entry("hosts/folder.py", "remove it, or move the extension out of the host's folder and install it with "
      "'pkgmgr ext install'", Mention("what to use for a tree adopt refuses (a FIFO, a link out, another user's "
                                      "file): its path is the user's to give; tests/hosts/test_host_attacks.py"))
entry("hosts/folder.py", "pass --force to replace it",
      Runs(s.reinstall_changed_content_of_a_host_extension, ("ext install", "sync")))
entry("hosts/vera.py", "reinstall it, or pass --force to adopt it as it is",
      Static("Vera's own records of a hand install, changed since: tests/hosts/test_vera.py writes them", ("adopt",)))
entry("hosts/gemini.py", "'gemini extensions uninstall {}', then 'pkgmgr ext install {} --allow-unverified' installs a copy "
      "pkgmgr manages",
      Runs(s.adopt_a_linked_gemini_extension))
entry("hosts/views.py", "{}: {} extension carries no version; pass --release VERSION to name the archive's version",
      Runs(s.new_eva_extension_and_its_readme, ("ext pack",)))
entry("hosts/base.py", "{} extensions are global: run the command without --scope workspace",
      Runs(s.vera_in_a_workspace, ("ext install", "ext link", "adopt")))
entry("workspace/sync.py", "pkgmgr ext install {}", Runs(s.sync_of_a_declared_vera_extension))
entry("hosts/approval.py", "remove or rename them; or run the command without --approve-host-trust, and approve the "
      "folder in {} itself", Static("a project folder holding a file Eva's hash cannot cover (a dot-named script, an "
                                    "unreadable one): tests/hosts/test_eva.py",
                                    ("ext install", "ext update", "ext remove", "ext enable", "ext disable", "sync")))
entry("net/http.py", "run without --offline", Runs(s.offline_with_nothing_cached,
                                                   ("ext install", "ext info", "ext search", "sync")))
entry("registry/readers.py", "run the command once without --offline to fill the cache",
      Runs(s.offline_with_nothing_cached, ("ext install", "ext info", "ext search", "sync")))
entry("registry/publish.py", "must be absolute; without --url the archive is copied into archives/ and recorded by a "
      "relative url", Static("a problem of registry publish's --url: tests/publish", ("registry publish",)))


# --- the tests --------------------------------------------------------------------------------------


def test_every_hint_is_in_the_catalogue() -> None:
    found = set(sites())
    missing = sorted(found - set(CATALOGUE))
    stale = sorted(set(CATALOGUE) - found)
    assert not missing, "hints without a catalogue entry:\n" + "\n".join(f"{m}: {t!r}" for m, t in missing)
    assert not stale, "catalogue entries whose hint is gone:\n" + "\n".join(f"{m}: {t!r}" for m, t in stale)


PLACEHOLDERS = {"{}:{}/{}": "ext:bundle/profile", "NAME": "name", "DIR": "dir", "FILE": "file",
                "ARCHIVE": "a.tar.gz", "SOURCE": "source", "VERSION": "1.0.0", "HEX": "0" * 64, "ACT": "act_0"}


def _filled(command: str) -> list[str]:
    command = command.replace("pkgmgr{}", "pkgmgr").replace("--host {}", "--host terva")
    command = command.replace("--expected-version {}", "--expected-version 1")
    for placeholder, value in PLACEHOLDERS.items():
        command = re.sub(rf"(?<![\w{{]){re.escape(placeholder)}(?!\w)", value, command)
    return shlex.split(command.replace("{}", "x"))[1:]


def _parser_of(words: str):  # noqa: ANN202 - an argparse parser
    from pkgmgr.cli.app import _subparsers, expand_aliases

    parser = build_parser()
    for word in expand_aliases(words.split()):
        parser = _subparsers(parser)[word]
    return parser


def _names_a_command(command: str) -> bool:
    """`command` names a command of the tree (`a/b/c`: any of the three), whatever follows it."""
    from pkgmgr.cli.app import _subparsers, expand_aliases
    from pkgmgr.cli.commands import VALUE_OPTIONS

    words, skip = [], False
    for word in shlex.split(command.replace("pkgmgr{}", "pkgmgr"))[1:]:
        if skip or word.startswith("-"):
            skip = not skip and word in VALUE_OPTIONS
            continue
        words.append(word)
    words = expand_aliases(words)
    parser = build_parser()
    for word in words:
        children = _subparsers(parser)
        if not children:
            return True
        choices = [c for c in word.split("/") if c in children]
        if not choices:
            return False
        parser = children[choices[0]]
    return not _subparsers(parser)


SUGGESTING = sorted(key for key, value in CATALOGUE.items() if not isinstance(value, Text))


@pytest.mark.parametrize("key", SUGGESTING, ids=[f"{m.removeprefix('pkgmgr/')}:{t[:40]}" for m, t in SUGGESTING])
def test_every_command_a_hint_names_exists_with_the_options_shown(key: tuple[str, str]) -> None:
    value = CATALOGUE[key]
    parser = build_parser()
    for command in commands_in(key[1]):
        if command == "{}":  # built whole at run time: only a scenario can try it
            assert isinstance(value, Runs), f"{key[1]!r}: a command built at run time needs a scenario"
            continue
        words = _filled(command)
        if isinstance(value, Mention):
            continue  # below: it names a command that exists
        try:
            args = parser.parse_args(words)
        except UsageError as error:
            raise AssertionError(f"{command!r} does not parse: {error.message}") from None
        assert args.handler is not None, command
    if isinstance(value, Mention):
        assert any(_names_a_command(command) for command in commands_in(key[1])), key[1]
    options = re.findall(r"(?:\bpass |\bwith |\bwithout |\bor |'|\()(--[a-z][a-z0-9-]+)", key[1])
    for name in getattr(value, "commands", ()):
        known = _parser_of(name)._option_string_actions
        for option in options:
            assert option in known, f"{key[1]!r}: '{name}' has no {option}"
    if options and not commands_in(key[1]) and not isinstance(value, Mention):
        assert getattr(value, "commands", ()), f"{key[1]!r}: say which commands print this option hint"


SCENARIOS = sorted({value.scenario for value in CATALOGUE.values() if isinstance(value, Runs)},
                   key=lambda f: f.__name__)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[f.__name__ for f in SCENARIOS])
def test_each_hint_does_what_it_says(scenario: Callable[[H], None], home: Path, tmp_path: Path) -> None:
    scenario(H(home, tmp_path))


def test_the_run_check_finds_an_option_the_command_lacks() -> None:
    """What `H.run` checks on every command a scenario runs: the known leftover (sync's hint once
    said "install it without --scope workspace", and Eva's note "pass --approve-host-trust" before
    sync had it) is caught; an option named inside a suggested command is that command's."""
    from tests.hints.harness import assert_suggested_options_exist
    from tests.support.cli import Result

    def printed(stderr: str) -> Result:
        return Result(code=2, stdout="", stderr=stderr)

    assert_suggested_options_exist(["sync"], printed("hint: pass --approve-host-trust to record the new hash"))
    assert_suggested_options_exist(["sync"], printed("hint: run 'pkgmgr ext install x --pin --save' first"))
    for argv, text in ((["sync"], "hint: run it with --pin"), (["ext", "list"], "hint: pass --force to replace it"),
                       (["-q", "ext", "remove", "x"], "hint: or '--allow-grants'"),
                       (["sync"], "hint: install it without --asset")):
        with pytest.raises(AssertionError, match="an option it does not have"):
            assert_suggested_options_exist(argv, printed(text))
