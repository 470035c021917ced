"""The install pipeline (`pkgmgr.install.pipeline`, `.plan`): consent for unverified plans,
parallel fetches whose failures stay with their ref, argument order, dry runs, local path plans."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from pkgmgr.config import Config
from pkgmgr.errors import PkgmgrError
from pkgmgr.install.options import InstallOptions
from pkgmgr.install.pipeline import InstallRequest, check_consent, install
from pkgmgr.install.plan import Fetched, Plan, plan_path
from pkgmgr.install.verify import prepare
from pkgmgr.refs import Ref, parse_ref
from pkgmgr.store.scope import global_scope
from pkgmgr.store.switch import list_installed
from tests.support.builders import minimal_manifest, tar_gz, write_extension

CONFIG = Config()
TRUSTING = InstallOptions(allow_unverified=True, yes=True)


def plan(verified: bool, *, tier: str | None = None) -> Plan:
    return Plan(Ref("name", "x", name="x"), "registry", "x", verified=verified, tier=tier)


@pytest.mark.parametrize("options, interactive, allowed", [
    (InstallOptions(), False, False),
    (InstallOptions(), True, True),  # a person at a terminal is asked instead of refused (SPEC 11)
    (InstallOptions(yes=True), True, False),  # --yes answers for them: the flag is needed
    (InstallOptions(allow_unverified=True), False, False),
    (InstallOptions(allow_unverified=True), True, True),  # a terminal prompt decides later
    (InstallOptions(allow_unverified=True, yes=True), False, True),
    (InstallOptions(yes=True), False, False),
])
def test_consent_matrix(options: InstallOptions, interactive: bool, allowed: bool) -> None:
    check_consent(plan(True), config=CONFIG, options=InstallOptions(), interactive=False)  # verified: no questions
    if allowed:
        check_consent(plan(False), config=CONFIG, options=options, interactive=interactive)
    else:
        with pytest.raises(PkgmgrError) as caught:
            check_consent(plan(False), config=CONFIG, options=options, interactive=interactive)
        assert caught.value.code == "unverified_source"


def test_policy_forbids_unverified_whatever_the_options() -> None:
    strict = Config(allow_unverified=False)
    with pytest.raises(PkgmgrError) as caught:
        check_consent(plan(False, tier="unverified"), config=strict, options=TRUSTING, interactive=True)
    assert caught.value.code == "unverified_source" and "tier unverified" in caught.value.message
    check_consent(plan(True, tier="official"), config=strict, options=InstallOptions(), interactive=False)


def test_plan_path_kinds(tmp_path: Path) -> None:
    directory = write_extension(tmp_path / "ext")
    archive = tar_gz(tmp_path / "ext.tar.gz", {"ext/extension.toml": "name = 'x'\n"})
    as_dir = plan_path(parse_ref(str(directory)))
    assert (as_dir.kind, as_dir.label, as_dir.verified, as_dir.needs_consent) == ("path", str(directory), False, True)
    fetched = as_dir.fetch(None)  # type: ignore[arg-type]
    assert (fetched.kind, fetched.directory, fetched.archive, fetched.sha256) == ("path", directory, None, None)
    as_archive = plan_path(parse_ref(str(archive)))
    fetched = as_archive.fetch(None)  # type: ignore[arg-type]
    assert (as_archive.kind, fetched.kind, fetched.archive) == ("archive", "archive", archive)
    assert fetched.sha256 is None  # a local archive is hashed while it is extracted (read once)
    good = tar_gz(tmp_path / "good.tar.gz", {"good/extension.toml": "name = 'good-ext'\nversion = '0.1.0'\n"
                                                                     "min_compozy_version = '0.5.0'\n",
                                             "good/README.md": "x" * 5000})
    staging = tmp_path / "staging"
    staging.mkdir()
    prepared = prepare(plan_path(parse_ref(str(good))).fetch(None), staging,  # type: ignore[arg-type]
                       config=CONFIG, options=TRUSTING)
    assert prepared.fetched.sha256 == hashlib.sha256(good.read_bytes()).hexdigest()
    with pytest.raises(PkgmgrError) as caught:
        plan_path(parse_ref(str(tmp_path / "missing")))
    assert caught.value.code == "not_found"


def test_plan_path_of_something_that_is_neither(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(PkgmgrError) as caught:
        plan_path(parse_ref(str(tmp_path / "fifo")))
    assert caught.value.code == "invalid_archive"


def test_relative_paths_become_absolute_locators(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_extension(tmp_path / "ext")
    monkeypatch.chdir(tmp_path)
    assert plan_path(parse_ref("./ext")).label == str(tmp_path / "ext")


def remote_planner(fetched: dict[str, Fetched | PkgmgrError], barrier: threading.Barrier | None = None):
    """A planner for `name` refs whose fetches return (or raise) what `fetched` says."""
    def planner(ref: Ref) -> Plan:
        def fetch(reporter: object) -> Fetched:
            if barrier is not None:
                barrier.wait(timeout=10)  # every fetch runs at the same time, or this times out
            value = fetched[ref.text]
            if isinstance(value, PkgmgrError):
                raise value
            return value

        return Plan(ref, "registry", ref.text, verified=True, tier="community", fetch=fetch)

    return planner


def registry_fetched(directory: Path) -> Fetched:
    return Fetched(kind="registry", locator="acme", directory=directory, verified=True, tier="community",
                   registry="acme")


def test_fetches_run_in_parallel_and_failures_stay_with_their_ref(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    one = write_extension(tmp_path / "one", minimal_manifest(name="one-ext"))
    three = write_extension(tmp_path / "three", minimal_manifest(name="three-ext"))
    fetched = {"one-ext": registry_fetched(one),
               "two-ext": PkgmgrError("download failed", code="network_error"),
               "three-ext": registry_fetched(three)}
    batch = install(InstallRequest(scope, ["one-ext", "two-ext", "three-ext"], config=CONFIG, options=InstallOptions(),
                    planner=remote_planner(fetched, threading.Barrier(3))))
    assert [r.status for r in batch.results] == ["installed", "failed", "installed"]
    assert batch.first_error is not None and batch.first_error.code == "network_error"
    assert [i.name for i in list_installed(scope)] == ["one-ext", "three-ext"]
    scope.close()


def test_planning_failures_do_not_stop_the_others(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    one = write_extension(tmp_path / "one", minimal_manifest(name="one-ext"))

    def planner(ref: Ref) -> Plan:
        if ref.name == "gone-ext":
            raise PkgmgrError("no registry lists gone-ext", code="not_found")
        return remote_planner({"one-ext": registry_fetched(one)})(ref)

    batch = install(InstallRequest(scope, ["gone-ext", "Bad_Ref", "one-ext"], config=CONFIG, options=InstallOptions(),
                    planner=planner))
    assert [(r.status, r.error.code if r.error else None) for r in batch.results] == [
        ("failed", "not_found"), ("failed", "usage"), ("installed", None)]
    assert batch.first_error.code == "not_found"  # type: ignore[union-attr]
    scope.close()


def test_dry_run_touches_no_scope(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    source = write_extension(tmp_path / "src")
    options = InstallOptions(dry_run=True, allow_unverified=True, yes=True)
    batch = install(InstallRequest(scope, [str(source)], config=CONFIG, options=options,
                    planner=remote_planner({})))
    [result] = batch.results
    assert (result.status, result.name, result.version) == ("planned", "demo-ext", "0.1.0")
    assert result.summary is not None and result.summary["source"] == "path"
    assert not (tmp_path / "home").exists()


def test_a_terminal_can_refuse(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    source = write_extension(tmp_path / "src")
    asked: list[dict] = []
    batch = install(InstallRequest(scope, [str(source)], config=CONFIG, options=InstallOptions(allow_unverified=True),
                    planner=remote_planner({}), interactive=True,
                    confirm=lambda summary: asked.append(summary) or False))
    assert [s["name"] for s in asked] == ["demo-ext"]
    assert batch.first_error is not None and batch.first_error.code == "unverified_source"
    assert not (tmp_path / "home").exists()  # refused before anything was written


def test_the_prompt_is_answered_without_holding_the_writer_lock(tmp_path: Path) -> None:
    from filelock import FileLock

    scope = global_scope(tmp_path / "home")
    with scope.writer(1):
        pass

    def confirm(summary: dict) -> bool:
        with FileLock(str(scope.lock_path), timeout=0):  # free: another writer could proceed
            return summary["name"] == "demo-ext"

    source = write_extension(tmp_path / "src")
    batch = install(InstallRequest(scope, [str(source)], config=CONFIG, options=InstallOptions(allow_unverified=True),
                    planner=remote_planner({}), interactive=True, confirm=confirm))
    assert [r.status for r in batch.results] == ["installed"]
    scope.close()


# --- extraction two at a time where creating files is slow (pipeline.prepare_all) -------------------

NAMES = [f"ext-{i}" for i in range(6)]


def many_files(tmp_path: Path, name: str, files: int = 25, manifest: object = None) -> Fetched:
    root = write_extension(tmp_path / "src" / name, manifest or minimal_manifest(name=name),
                           {f"docs/file-{i:02d}.md": f"{name} {i}\n" for i in range(files)})
    return registry_fetched(root)


def threads_of_prepare(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """name -> the thread each tree was prepared in."""
    import pkgmgr.install.pipeline as pipeline

    seen: dict[str, str] = {}

    def recording(item: Fetched, staging: Path, **kwargs: object):  # noqa: ANN202 - prepare's own type
        prepared = prepare(item, staging, **kwargs)  # type: ignore[arg-type]
        seen[prepared.name] = threading.current_thread().name
        return prepared

    monkeypatch.setattr(pipeline, "prepare", recording)
    return seen


@pytest.mark.parametrize("slow", [False, True])
def test_trees_are_prepared_two_at_a_time_only_where_creating_files_is_slow(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow: bool) -> None:
    import pkgmgr.install.pipeline as pipeline

    monkeypatch.setattr(pipeline, "SLOW_MICROSECONDS_PER_FILE", 0 if slow else 10**9)
    seen = threads_of_prepare(monkeypatch)
    scope = global_scope(tmp_path / "home")
    batch = install(InstallRequest(scope, NAMES, config=CONFIG, options=InstallOptions(),
                    planner=remote_planner({name: many_files(tmp_path, name) for name in NAMES})))
    assert [r.status for r in batch.results] == ["installed"] * len(NAMES)
    assert [i.name for i in list_installed(scope)] == NAMES
    # the first two in the command's thread (the second is the one timed), the rest in the pool
    workers = {name for name, thread in seen.items() if thread.startswith("pkgmgr-prepare")}
    assert workers == (set(NAMES[2:]) if slow else set())
    scope.close()
    assert not any((tmp_path / "home" / ".staging").iterdir())


def test_a_refused_tree_in_the_pool_fails_its_ref_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pkgmgr.install.pipeline as pipeline

    monkeypatch.setattr(pipeline, "SLOW_MICROSECONDS_PER_FILE", 0)
    fetched: dict[str, Fetched | PkgmgrError] = {name: many_files(tmp_path, name) for name in NAMES}
    fetched["ext-4"] = many_files(tmp_path, "ext-4", manifest="name = [")  # no TOML
    scope = global_scope(tmp_path / "home")
    batch = install(InstallRequest(scope, NAMES, config=CONFIG, options=InstallOptions(), planner=remote_planner(fetched),
                    keep_going=True))
    assert [r.status for r in batch.results] == ["installed"] * 4 + ["failed", "installed"]
    assert batch.first_error is not None and batch.first_error.code == "invalid_manifest"
    assert [i.name for i in list_installed(scope)] == [n for n in NAMES if n != "ext-4"]
    scope.close()


def test_a_bug_in_the_pool_is_raised_and_leaves_no_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pkgmgr.install.pipeline as pipeline

    monkeypatch.setattr(pipeline, "SLOW_MICROSECONDS_PER_FILE", 0)
    real = pipeline.prepare

    def failing(item: Fetched, staging: Path, **kwargs: object):  # noqa: ANN202
        if item.directory is not None and item.directory.name == "ext-3":
            raise RuntimeError("a bug")
        return real(item, staging, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "prepare", failing)
    scope = global_scope(tmp_path / "home")
    with pytest.raises(RuntimeError, match="a bug"):
        install(InstallRequest(scope, NAMES, config=CONFIG, options=InstallOptions(),
                planner=remote_planner({name: many_files(tmp_path, name) for name in NAMES})))
    assert list_installed(scope) == [] and not any((tmp_path / "home" / ".staging").iterdir())
    scope.close()


@pytest.mark.parametrize("files, seconds, slow", [(60, 0.006, False), (60, 0.03, True), (10, 1.0, False)])
def test_what_counts_as_slow_to_create(tmp_path: Path, files: int, seconds: float, slow: bool) -> None:
    from pkgmgr.install.pipeline import SLOW_MICROSECONDS_PER_FILE, _slow_to_create

    assert SLOW_MICROSECONDS_PER_FILE == 250
    (tmp_path / "st").mkdir()
    prepared = prepare(many_files(tmp_path, "ext-0", files=files - 1), tmp_path / "st", config=CONFIG,
                       options=TRUSTING)
    assert len(prepared.listing) == files  # the manifest and the docs
    assert _slow_to_create((tmp_path / "st", prepared), seconds) is slow
    assert _slow_to_create((tmp_path / "st", PkgmgrError("refused", code="invalid_config")), seconds) is False
