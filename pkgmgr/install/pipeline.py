"""The install pipeline: plan -> fetch -> verify -> stage -> switch, for a batch of refs.

Every ref is planned (`pkgmgr.install.plan`) and checked against policy, fetched in parallel,
staged and verified (`pkgmgr.install.verify`), then switched to by a `Destination`
(`pkgmgr.hosts.port.Destination`; by default `install.host_routing.HostRouting`: each tree to
its own host's destination). The pipeline calls nothing
else of the store or the activations.

Refs are committed in argument order under one hold of the destination's writer lock. Every ref
is resolved, fetched, verified and checked against the destination first; when one fails there,
nothing is committed (the others are reported as held) unless `keep_going`, where a failing ref
does not stop the others. Either way the first failure in argument order becomes the command's
error with the others' outcomes beside it (SPEC 4).
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, runtime_checkable

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.hosts.port import Announce, BatchDestination, Destination, Prepared, SwitchRefused
from pkgmgr.install.host_routing import HostRouting
from pkgmgr.install.options import InstallOptions
from pkgmgr.install.plan import Fetched, Plan, plan_path
from pkgmgr.install.verify import prepare
from pkgmgr.progress import Reporter
from pkgmgr.refs import Ref, parse_ref

if TYPE_CHECKING:
    from pkgmgr.config import Config
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import Outcome

Confirm = Callable[[dict[str, Any]], bool]


@dataclass
class RefResult:
    ref: str
    status: str = "pending"  # installed | switched | reinstalled | unchanged | skipped | planned | failed
    name: str | None = None
    version: str | None = None
    outcome: Outcome | None = None
    summary: dict[str, Any] | None = None
    error: PkgmgrError | None = None
    message: str = ""


@dataclass
class BatchResult:
    results: list[RefResult] = field(default_factory=list)

    @property
    def first_error(self) -> PkgmgrError | None:
        return next((r.error for r in self.results if r.error is not None), None)


def check_consent(plan: Plan, *, config: Config, options: InstallOptions, interactive: bool) -> None:
    """SPEC 7: an unverified source needs --allow-unverified, and --yes where nobody can be asked;
    a person at a terminal is asked instead (SPEC 11: the question before a refusal)."""
    if not plan.needs_consent:
        return
    what = f"{plan.label} ({plan.kind}{', tier ' + plan.tier if plan.tier else ''})"
    if not config.allow_unverified:
        raise PkgmgrError(f"{what} is not verified by a registry and policy.allow_unverified is false",
                          code=Code.UNVERIFIED_SOURCE)
    if not options.allow_unverified and (options.yes or not interactive):  # a terminal is asked instead
        raise PkgmgrError(f"{what} is not verified by a registry", code=Code.UNVERIFIED_SOURCE,
                          hint="pass --allow-unverified to install it anyway")
    if not options.yes and not interactive:
        raise PkgmgrError(f"{what} is not verified and nobody can be asked to confirm it",
                          code=Code.UNVERIFIED_SOURCE, hint="pass --yes together with --allow-unverified")


class Planner(Protocol):
    """What turns a ref that names something remote (a name, `github:`, a URL) into a `Plan`
    (`registry.plan.make_planner`); local paths are planned by `install.plan.plan_path`."""

    def __call__(self, ref: Ref) -> Plan: ...


@runtime_checkable
class BatchPlanner(Planner, Protocol):
    """A planner that reads a batch's registry entries at once (`prefetch`, before planning them
    one by one) and records what they read once (`remember`, after every plan succeeded)."""

    def prefetch(self, refs: list[Ref]) -> None: ...
    def remember(self) -> None: ...


@dataclass(frozen=True)
class InstallRequest:
    """One batch for the pipeline: `refs` to install into `scope`, each planned by `planner` — or,
    instead of `refs`, the `planned` refs of a caller that resolved already (update and sync; two
    may share a ref text: two assets of one release). `confirm` asks the operator about an
    unverified source (showing its summary); `announce` shows every other ref's summary just before
    it is committed — what it grants, runs and needs from the network (SPEC 7). `destination` is
    where verified trees go: by default each tree's own host's destination in `scope`
    (`install.host_routing.HostRouting`). Without `keep_going` (`ext install` unless --keep-going)
    a ref that fails before the first commit leaves every ref uncommitted (module docstring)."""

    scope: Scope
    refs: Sequence[str] = ()
    _: KW_ONLY
    config: Config
    options: InstallOptions
    planner: Planner | None = None
    planned: Sequence[Plan] | None = None
    interactive: bool = False
    confirm: Confirm | None = None
    reporter: Reporter | None = None
    lock_timeout: float = 30.0
    announce: Announce | None = None
    destination: Destination | None = None
    keep_going: bool = True


def install(request: InstallRequest) -> BatchResult:
    """Run the batch `request` describes (`InstallRequest`): every ref's outcome, and the first
    failure in argument order as the batch's error."""
    config, options, planner, planned = request.config, request.options, request.planner, request.planned
    keep_going, announce = request.keep_going, request.announce
    reporter = request.reporter or Reporter()
    target: Destination = (request.destination if request.destination is not None
                           else HostRouting(request.scope, options.host))
    refs = [plan.ref.text for plan in planned] if planned is not None else list(request.refs)
    batch = BatchResult([RefResult(ref) for ref in refs])
    plans: dict[int, Plan] = {}
    wanted: dict[int, Ref] = {}
    for index, text in enumerate(refs):
        result = batch.results[index]
        if planned is not None:
            wanted[index] = planned[index].ref
            continue
        try:
            ref = parse_ref(text)
            if ref.kind == "name" and not ref.spec:
                current = target.installed(ref.name or "")
                if current is not None:
                    result.status, result.name, result.version = "skipped", current.name, current.version
                    result.message = (f"{current.name} {current.version} is already installed; "
                                      f"'pkgmgr ext update {current.name}' moves it to a newer version")
                    continue
            wanted[index] = ref
        except PkgmgrError as error:
            result.status, result.error = "failed", error
    if isinstance(planner, BatchPlanner) and len(wanted) > 1:  # registry entries read concurrently, checked below
        planner.prefetch(list(wanted.values()))
    for index, ref in wanted.items():
        result = batch.results[index]
        try:
            if planned is not None:
                plan = planned[index]
            elif ref.kind == "path" or planner is None:
                plan = plan_path(ref)
            else:
                plan = planner(ref)
            check_consent(plan, config=config, options=options, interactive=request.interactive)
            plans[index] = plan
        except PkgmgrError as error:
            result.status, result.error = "failed", error
    if isinstance(planner, BatchPlanner) and plans:  # what the batch's plans read from registries, recorded once
        try:
            planner.remember()
        except PkgmgrError as error:  # as when each plan recorded it: the plans fail with it
            for index in plans:
                batch.results[index].status, batch.results[index].error = "failed", error
            plans.clear()

    fetched = fetch_all(plans, config=config, reporter=reporter, batch=batch)
    if not fetched:
        return batch
    if not keep_going and batch.first_error is not None:
        for index, item in fetched.items():  # verified all the same: every ref's outcome is reported
            _preview(batch.results[index], item, config=config, options=options, destination=target)
        _hold(batch, plans)
        return batch
    if options.dry_run:
        for index, item in fetched.items():
            if _preview(batch.results[index], item, config=config, options=options, destination=target):
                batch.results[index].status = "planned"
        return batch
    shown: set[int] = set()  # summaries the operator saw at a prompt
    confirm = request.confirm
    if not options.yes and confirm is not None:
        # ask before taking the writer lock, so that a prompt left open never blocks other writers
        for index in [i for i in fetched if plans[i].needs_consent]:
            shown.add(index)
            result = batch.results[index]
            if not _preview(result, fetched[index], config=config, options=options):
                del fetched[index]
            elif not confirm(result.summary or {}):
                result.status = "failed"
                result.error = PkgmgrError(f"{result.name} {result.version}: not confirmed", code=Code.UNVERIFIED_SOURCE)
                del fetched[index]
        if not keep_going and _hold(batch, plans):
            return batch
        if not fetched:
            return batch
    try:
        with target.writer(request.lock_timeout):
            prepared = prepare_all(target, fetched, config=config, options=options)
            if not keep_going and _refused(target, batch, prepared, options=options):
                for staging, _ in prepared.values():
                    target.discard(staging)
                _hold(batch, plans)
                return batch
            target.make_durable([item for _, item in prepared.values() if not isinstance(item, PkgmgrError)])
            whole = None if keep_going else _batch_destination(target, prepared)
            if whole is not None:  # one transaction for every ref: all or nothing (SPEC 4)
                _commit_all(whole, batch, prepared, plans, options=options,
                            announces={i: None if i in shown else announce for i in prepared})
                return batch
            for index in fetched:
                _commit_one(target, batch.results[index], prepared[index], options=options,
                            announce=None if index in shown else announce)
    except PkgmgrError as error:  # the lock or the state database: what was not committed fails with it
        for index in fetched:
            result = batch.results[index]
            if result.status == "pending":
                result.status, result.error = "failed", error
    return batch


Staged = tuple[Path, "Prepared[Any] | PkgmgrError"]


def _hold(batch: BatchResult, plans: dict[int, Plan]) -> bool:
    """When a ref failed, mark every ref still pending as held (not installed) and say so."""
    failed = next((r for r in batch.results if r.status == "failed"), None)
    if failed is None:
        return False
    for index, plan in plans.items():
        result = batch.results[index]
        if result.status == "pending":
            result.status, result.name, result.version = "skipped", result.name or plan.name, \
                result.version or plan.version
            result.message = (f"{result.name or result.ref} not installed: {failed.ref} failed, so nothing "
                              "was installed (--keep-going installs the refs that succeed)")
    return True


def _refused(destination: Destination, batch: BatchResult, staged: dict[int, Staged], *,
             options: InstallOptions) -> bool:
    """Run, reading only, the checks a switch would refuse a verified ref with (its verification's
    own failure, `source_conflict`, `bundle_missing`); each failure lands in its result."""
    refused = False
    for index, (_, verified) in staged.items():
        result = batch.results[index]
        try:
            if isinstance(verified, PkgmgrError):
                raise verified
            result.name, result.version = verified.name, verified.version
            destination.check_switch(verified, options)
        except PkgmgrError as error:
            result.status, result.error, refused = "failed", error, True
    return refused


def _without_staging(error: PkgmgrError, staging: Path, item: Fetched) -> PkgmgrError:
    """The error with the private staging path replaced by what the user named (SPEC 11:
    messages never show internal paths)."""
    label = item.label or item.locator
    for internal in (f"{staging}{os.sep}tree", str(staging)):
        if internal in error.message:
            error.message = error.message.replace(internal, label)
            error.args = (error.message,)
    return error


# Extracting two trees at a time pays only where creating a file is slow: the kernel work of each
# create then overlaps the other thread's Python. Measured on install-many's 20 trees: 0.75x of
# one thread where a create cost ~170 us (the work directory in a crowded ext4 block group), 1.15x
# where it cost ~40 us (the two threads' GIL hand-offs). A tree is judged slow from this many
# microseconds of wall time per file (~125 there, ~500 in the slow case).
SLOW_MICROSECONDS_PER_FILE = 250
PREPARE_WORKERS = 2


def prepare_all(destination: Destination, fetched: dict[int, Fetched], *, config: Config, options: InstallOptions,
                ) -> dict[int, Staged]:
    """Extract and validate every fetched ref, each in its own staging directory (writer lock
    held): one after the other, or, once the second tree showed that creating files is slow here
    (`SLOW_MICROSECONDS_PER_FILE`; the first pays the first use of the validators), the rest two at
    a time. Returns index -> (staging directory, Prepared or the error it raised); on anything but
    a PkgmgrError no staging directory is left behind."""
    staged: dict[int, Staged] = {}
    items = list(fetched.items())
    try:
        for position, (index, item) in enumerate(items):
            started = time.perf_counter()
            staged[index] = _prepare_one(destination, item, config=config, options=options)
            rest = items[position + 1:]
            if position == 1 and len(rest) > 1 and _slow_to_create(staged[index], time.perf_counter() - started):
                staged.update(_prepare_in_threads(destination, rest, config=config, options=options))
                break
    except BaseException:  # a bug or an interrupt
        for staging, _ in staged.values():
            destination.discard(staging)
        raise
    return staged


def _prepare_one(destination: Destination, item: Fetched, *, config: Config, options: InstallOptions) -> Staged:
    staging = destination.new_staging()
    try:
        return staging, prepare(item, staging, config=config, options=options)
    except PkgmgrError as error:
        return staging, _without_staging(error, staging, item)
    except BaseException:
        destination.discard(staging)
        raise


def _slow_to_create(result: Staged, seconds: float) -> bool:
    prepared = result[1]
    files = 0 if isinstance(prepared, PkgmgrError) else len(prepared.listing)
    return files >= 20 and seconds * 1e6 / files >= SLOW_MICROSECONDS_PER_FILE


def _prepare_in_threads(destination: Destination, items: list[tuple[int, Fetched]], *, config: Config,
                        options: InstallOptions) -> dict[int, Staged]:
    """`_prepare_one` of each of `items`, `PREPARE_WORKERS` at a time. What a worker raises
    besides a PkgmgrError is raised once every worker is done, the others' staging removed."""
    from pkgmgr.threads import map_in_threads  # here: a batch of one never needs it (issue 30)

    def attempt(item: tuple[int, Fetched]) -> Staged | BaseException:
        try:
            return _prepare_one(destination, item[1], config=config, options=options)
        except BaseException as exc:  # noqa: BLE001 - raised below, after every worker is done
            return exc

    outcomes = map_in_threads(attempt, items, workers=PREPARE_WORKERS, name="pkgmgr-prepare")
    done = {index: outcome for (index, _), outcome in zip(items, outcomes) if not isinstance(outcome, BaseException)}
    failure = next((outcome for outcome in outcomes if isinstance(outcome, BaseException)), None)
    if failure is not None:
        for staging, _ in done.values():
            destination.discard(staging)
        raise failure
    return done


def _batch_destination(target: Destination, staged: dict[int, Staged]) -> BatchDestination | None:
    """The destination switching every prepared tree at once, if one does (the scope store for a
    batch of Compozy trees, the host routing for a batch across hosts; names distinct per host);
    None: switch ref by ref."""
    trees = [item for _, item in staged.values() if not isinstance(item, PkgmgrError)]
    if len(trees) != len(staged):
        return None
    names = [(item.host, item.name) for item in trees]
    if len(set(names)) != len(names):
        return None
    if isinstance(target, HostRouting):
        return target.batch_destination(trees)
    return target if isinstance(target, BatchDestination) else None


def _commit_all(destination: BatchDestination, batch: BatchResult, staged: dict[int, Staged], plans: dict[int, Plan],
                *, options: InstallOptions, announces: dict[int, Announce | None]) -> None:
    """Commit every prepared ref in one step (writer lock held) and drop the staging
    directories; a refusal lands in its ref's result and holds the others (nothing committed)."""
    indexes = list(staged)
    trees: list[Prepared[Any]] = []
    for index in indexes:
        tree = staged[index][1]
        assert not isinstance(tree, PkgmgrError)
        result = batch.results[index]
        result.summary = tree.summary()
        result.name, result.version = tree.name, tree.version
        trees.append(tree)
    try:
        outcomes = destination.switch_all(trees, options, [announces[i] for i in indexes])
        for index, outcome in zip(indexes, outcomes, strict=True):
            result = batch.results[index]
            result.outcome, result.status = outcome, outcome.action
    except SwitchRefused as refused:
        result = batch.results[indexes[refused.index]]
        result.status, result.error = "failed", refused.error
        _hold(batch, plans)
    finally:
        for staging, _ in staged.values():
            destination.discard(staging)


def _commit_one(destination: Destination, result: RefResult, staged: Staged, *, options: InstallOptions,
                announce: Announce | None) -> None:
    """Commit one prepared ref (writer lock held) and drop its staging directory; a failure
    (its preparation's included) lands in `result`."""
    staging, prepared = staged
    try:
        if isinstance(prepared, PkgmgrError):
            raise prepared
        result.summary = prepared.summary()
        result.name, result.version = prepared.name, prepared.version
        outcome = destination.switch(prepared, options, announce)
        result.outcome, result.status = outcome, outcome.action
    except PkgmgrError as error:
        result.status, result.error = "failed", error
    finally:
        destination.discard(staging)


def fetch_all(plans: dict[int, Plan], *, config: Config, reporter: Reporter, batch: BatchResult) -> dict[int, Fetched]:
    """Download every plan in parallel (a bounded pool); failures land in their result."""
    fetched: dict[int, Fetched] = {}
    if not plans:
        return fetched
    workers = max(1, min(config.network.parallel, len(plans)))
    if workers == 1:
        futures = {index: _call(plan, reporter) for index, plan in plans.items()}
    else:
        from pkgmgr.threads import map_in_threads  # here: a batch of one never needs it (issue 30)

        items = list(plans.items())
        values = map_in_threads(lambda item: _call(item[1], reporter), items, workers=workers, name="pkgmgr-fetch")
        futures = {index: value for (index, _), value in zip(items, values)}
    for index in sorted(futures):
        value = futures[index]
        if isinstance(value, PkgmgrError):
            batch.results[index].status, batch.results[index].error = "failed", value
        else:
            fetched[index] = value
    return fetched


def _call(plan: Plan, reporter: Reporter) -> Fetched | PkgmgrError:
    try:
        return plan.fetch_expected(reporter)
    except PkgmgrError as error:
        return error


def _preview(result: RefResult, item: Fetched, *, config: Config, options: InstallOptions,
             destination: Destination | None = None) -> bool:
    """Validate and summarise in a throw-away directory outside the scope (a dry run, or what a
    prompt shows); write nothing. With `destination` (a dry run), also check what its switch
    would refuse (a scope's activations keep their bundle and profile). False, with the error in
    `result`, when it would fail."""
    with tempfile.TemporaryDirectory(prefix="pkgmgr-preview-") as tmp:
        try:
            try:
                prepared = prepare(item, Path(tmp), config=config, options=options)
            except PkgmgrError as error:
                raise _without_staging(error, Path(tmp), item) from None
            if destination is not None:
                destination.check_switch(prepared, options)
        except PkgmgrError as error:
            result.status, result.error = "failed", error
            return False
        result.summary = prepared.summary()
        result.name, result.version = prepared.name, prepared.version
        return True
