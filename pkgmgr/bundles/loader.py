"""Bundle files of an extension (SPEC 8): discovery, decoding and every scope-independent rule.

`load_bundles` reads each bundle file named by `resources.bundles` (directories walked
recursively; `.toml` and `.json` count), the agent folders and layout files its profiles name,
and reports every problem of every file together. The scope rules (agent references, the
layout's scope binding, agent conflicts) belong to activation.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from pkgmgr.bundles.agent import BUNDLE_GENERATION, load_agent
from pkgmgr.bundles.bundle import AgentSpec, Bundle, Channel, Channels, JobSpec, LayoutSpec, Profile, TriggerSpec
from pkgmgr.bundles.files import PackageTree, TreeError, normalize
from pkgmgr.bundles.keys import fold_bundle_keys
from pkgmgr.bundles.layout import MAX_LAYOUT_BYTES, parse_layout
from pkgmgr.bundles.names import UniqueNames, agent_key, name_problem
from pkgmgr.bundles.prompt_template import prompt_template_problem
from pkgmgr.bundles.schedule import (
    check_fire_limit,
    check_retry,
    check_schedule,
    check_trigger_filter,
)
from pkgmgr.bundles.task import check_task
from pkgmgr.documents import MIB
from pkgmgr.errors import Code, Problem, ProblemSink, raise_problems
from pkgmgr.jsonutil import join_key
from pkgmgr.manifest.network import go_trim_space

CODE = Code.INVALID_BUNDLE
BUNDLE_SUFFIXES = (".toml", ".json")
MAX_BUNDLE_BYTES = 4 * MIB
CORE_FIELDS = ("name", "description", "profiles")
WEBHOOK = "webhook"


def load_bundles(
    root: Path,
    bundle_paths: Sequence[str],
    *,
    reserved_agent_names: Collection[str],
    manifest_file: str = "extension.toml",
    generation: str = BUNDLE_GENERATION,
    provides: Collection[str] | None = None,
) -> tuple[Bundle, ...]:
    """Load and validate the bundles of the extension at `root`.

    `bundle_paths` is the manifest's `resources.bundles` (problems with an entry itself are
    filed under `manifest_file`, key `resources.bundles[i]`). Applies every scope-independent
    rule of SPEC 8. Raises ValidationFailed listing every problem of every file (codes
    `invalid_bundle`, `invalid_layout`, `path_escapes_root`), each naming its file relative to
    `root` and its key path. Agents are judged by the Compozy `generation` (a generation with
    bundles: v0.2 or v0.3-beta.3), whose hook taxonomy differs. `provides` is the manifest's
    `capabilities.provides` (a bridge preset of an extension that provides `bridge.adapter` may
    leave out extension_name and platform); None when unknown, and that rule is not applied.
    """
    loader = _Loader(PackageTree.open(root, code=CODE), frozenset(name.lower() for name in reserved_agent_names),
                     generation)
    loader.provides = None if provides is None else frozenset(go_trim_space(p) for p in provides)
    bundles: list[Bundle] = []
    names = UniqueNames()
    for rel in loader.discover(bundle_paths, manifest_file):
        name, name_key, bundle = loader.bundle_file(rel)
        if name is not None:
            first = names.claim(name, rel)
            if first is not None:
                loader.problems.append(
                    Problem(CODE, rel, name_key, f"duplicate bundle name {name!r}: {first} already uses it "
                            "(bundle names are unique case-insensitively within an extension)")
                )
        if bundle is not None:
            bundles.append(bundle)
    raise_problems(loader.problems)
    return tuple(bundles)


def load_bundles_of(root: Path, bundle_paths: Sequence[str], *, reserved_agent_names: Collection[str],
                    generation: str = "auto", provides: Collection[str] | None = None) -> tuple[Bundle, ...]:
    """The bundles of an installed extension, judged by `generation`, or under `auto` by the
    newest generation with bundles that loads them (a layout's document version, an agent's hook
    events differ between v0.2 and v0.3-beta.3; it was judged so when it was installed). Raises
    as `load_bundles`, the refusal with the fewest problems when no generation loads them."""
    from pkgmgr.errors import ValidationFailed
    from pkgmgr.manifest.generations import GENERATIONS, has_bundles

    candidates = [generation] if generation != "auto" else [g for g in reversed(GENERATIONS) if has_bundles(g)]
    failures: list[ValidationFailed] = []
    for candidate in candidates:
        try:
            return load_bundles(root, bundle_paths, reserved_agent_names=reserved_agent_names, generation=candidate,
                                provides=provides)
        except ValidationFailed as exc:
            failures.append(exc)
    raise min(failures, key=lambda exc: len(exc.problems))


def _text(table: dict[str, Any], key: str) -> str:
    """A string field as Compozy reads it: trimmed (Go's strings.TrimSpace); "" otherwise."""
    value = table.get(key)
    return go_trim_space(value) if isinstance(value, str) else ""


def _tables(table: dict[str, Any], key: str) -> list[tuple[int, dict[str, Any]]]:
    """The (index, table) items of list `key`; other shapes are the schema's to report."""
    value = table.get(key)
    return [(index, item) for index, item in enumerate(value) if isinstance(item, dict)] if isinstance(value, list) else []


def _claim_name(sink: ProblemSink, names: UniqueNames, value: Any, key: str, what: str, within: str) -> None:
    """A name as Compozy reads it (trimmed), required and unique within `within`."""
    if value is None:
        sink.add(key, "is required")
        return
    if not isinstance(value, str):
        return
    value = go_trim_space(value)
    problem = name_problem(value, f"{what} name")
    if problem:
        sink.add(key, problem)
        return
    first = names.claim(value, key)
    if first is not None:
        how = "case-sensitively" if what in ("job", "trigger", "channel", "bridge") else "case-insensitively"
        sink.add(key, f"duplicate {what} name {value!r} (first at {first}); {what} names are unique {how} within {within}")


def _required(sink: ProblemSink, table: dict[str, Any], key: str, field: str) -> None:
    """A string field Compozy requires non-blank once trimmed (a missing one included)."""
    value = table.get(field)
    if value is None or (isinstance(value, str) and not go_trim_space(value)):
        sink.add(f"{key}.{field}", "is required (a non-empty string)")


def _named_entries(sink: ProblemSink, table: dict[str, Any], key: str, kind: str, what: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, table) of each job, trigger or bridge (`kind`), after the rule they share: a
    name, unique in the profile (case-sensitively, as Compozy compares them)."""
    names = UniqueNames(case_sensitive=True)
    for index, entry in _tables(table, kind):
        entry_key = f"{key}.{kind}[{index}]"
        _claim_name(sink, names, entry.get("name"), f"{entry_key}.name", what, "a profile")
        yield entry_key, entry


class _Loader:
    """One `load_bundles` call: the tree, the problems so far, and agent folders and layout
    files already loaded (profiles may share them; their own problems are reported once)."""

    def __init__(self, tree: PackageTree, reserved: frozenset[str], generation: str) -> None:
        self.tree = tree
        self.reserved = reserved
        self.generation = generation
        self.problems: list[Problem] = []
        self.side: list[Problem] = []  # problems of agent/layout files met while reading a bundle file
        self.loaded: dict[tuple[str, str], tuple[Any, TreeError | None]] = {}  # (kind, path) -> (spec, path error)
        self.provides: frozenset[str] | None = None  # the manifest's capabilities.provides, when known

    # -- files -------------------------------------------------------------------------------

    def discover(self, bundle_paths: Sequence[str], manifest_file: str) -> list[str]:
        """Bundle files in manifest order, each directory walked sorted; each file once."""
        files: list[str] = []
        seen: set[Path] = set()
        for index, entry in enumerate(bundle_paths):
            key = f"resources.bundles[{index}]"
            try:
                found = [(rel, self.tree.resolve(rel)) for rel in self._entry_files(entry)]
            except TreeError as exc:
                self.problems.append(Problem(exc.code, manifest_file, key, exc.message))
                continue
            for rel, real in found:
                if real not in seen:
                    seen.add(real)
                    files.append(rel)
        return files

    def _entry_files(self, entry: Any) -> list[str]:
        if not isinstance(entry, str) or not entry:
            raise TreeError(CODE, "must be a non-empty relative path")
        real = self.tree.resolve(entry)
        if real.is_dir():
            found, issues = self.tree.walk(entry, BUNDLE_SUFFIXES)
            self.problems.extend(Problem(error.code, path, "", error.message) for path, error in issues)
            return found
        if not real.is_file():
            raise TreeError(CODE, f"{entry} does not exist")
        if not entry.endswith(BUNDLE_SUFFIXES):
            raise TreeError(CODE, f"{entry} is not a bundle file (.toml or .json)")
        return [normalize(entry)]

    def bundle_file(self, rel: str) -> tuple[str | None, str, Bundle | None]:
        """(bundle name, its key, the Bundle or None when the file has problems)."""
        document, read_problems = self.tree.read_document(rel, kind=rel.rsplit(".", 1)[1], limit=MAX_BUNDLE_BYTES)
        self.problems.extend(read_problems)
        if document is None:
            return None, "", None
        sink = ProblemSink(rel, CODE)
        if not isinstance(document, dict):
            sink.add("", "a bundle file holds an object (name, description, profiles)")
            self.problems.extend(sink.problems)
            return None, "", None
        from pkgmgr.schemas import schema_problems

        document, ignored = fold_bundle_keys(document)
        reported = {problem.key for problem in read_problems}
        sink.extend(problem for problem in schema_problems(document, "bundle", file=rel, code=CODE) if problem.key not in reported)
        core, prefix = self._core(sink, document)
        name, name_key = core.get("name"), join_key(prefix, "name")
        if isinstance(name, str):
            name = go_trim_space(name)
        if not name:
            sink.add(name_key, "a bundle needs a name")
        elif isinstance(name, str) and (problem := name_problem(name, "bundle name")):
            sink.add(name_key, problem)
        profiles_key = join_key(prefix, "profiles")
        if not core.get("profiles"):
            sink.add(profiles_key, "a bundle needs at least one profile")
        names = UniqueNames()
        profiles = []
        for index, table in _tables(core, "profiles"):
            key = f"{profiles_key}[{index}]"
            _claim_name(sink, names, table.get("name"), f"{key}.name", "profile", "a bundle")
            profiles.append(self._profile(sink, table, key))
        self.problems.extend(sink.problems)
        self.problems.extend(self.side)
        clean = not (read_problems or sink or self.side)
        self.side = []
        bundle = Bundle(name, _text(core, "description"), rel, tuple(profiles),
                        warnings=tuple(f"{rel}: {warning}" for warning in ignored)) if clean and name else None
        return (name if isinstance(name, str) else None), name_key, bundle

    @staticmethod
    def _core(sink: ProblemSink, document: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The bundle fields and their key prefix ("" or "bundle"), merged as Compozy's
        `toBundleSpec` does: a field may sit at the root or under [bundle], or both when the
        trimmed values agree; profiles in both places conflict."""
        inner = document.get("bundle")
        if not isinstance(inner, dict):
            return document, ""
        merged = dict(inner)
        for field in CORE_FIELDS:
            outer, wrapped = document.get(field), inner.get(field)
            if field == "profiles":
                if outer and wrapped:
                    sink.add(field, "profiles are listed at the root and under [bundle]; keep them in one place")
                elif outer:
                    merged[field] = outer
                continue
            outer_text = go_trim_space(outer) if isinstance(outer, str) else outer
            wrapped_text = go_trim_space(wrapped) if isinstance(wrapped, str) else wrapped
            if outer_text and wrapped_text and outer_text != wrapped_text:
                sink.add(field, f"conflicting root and [bundle] values of {field}")
            elif outer_text and not wrapped_text:
                merged[field] = outer
        return merged, "bundle"

    # -- profiles ----------------------------------------------------------------------------

    def _profile(self, sink: ProblemSink, table: dict[str, Any], key: str) -> Profile:
        declared = table.get("channels")
        channels = self._channels(sink, declared, f"{key}.channels") if isinstance(declared, dict) else Channels()
        return Profile(
            name=_text(table, "name"),
            description=_text(table, "description"),
            channels=channels,
            agents=self._packaged(sink, table, key, "agents"),
            layouts=self._packaged(sink, table, key, "layouts"),
            jobs=self._jobs(sink, table, key, {item.name for item in channels.items}),
            triggers=self._triggers(sink, table, key),
            bridges=self._bridges(sink, table, key, self.provides),
        )

    @staticmethod
    def _channels(sink: ProblemSink, table: dict[str, Any], key: str) -> Channels:
        names = UniqueNames(case_sensitive=True)
        items = []
        for index, item in _tables(table, "items"):
            name = item.get("name")
            _claim_name(sink, names, name, f"{key}.items[{index}].name", "channel", "a profile")
            if isinstance(name, str):
                items.append(Channel(go_trim_space(name), _text(item, "description")))
        primary = _text(table, "primary")
        if primary and primary not in [item.name for item in items]:
            choices = ", ".join(repr(item.name) for item in items) or "none declared"
            sink.add(f"{key}.primary", f"{primary!r} is not one of the channel items ({choices})")
        elif items and not primary:
            sink.add(f"{key}.primary", "is required when channel items are declared; name one of them")
        return Channels(primary or None, tuple(items))

    def _packaged(self, sink: ProblemSink, table: dict[str, Any], key: str, kind: str) -> tuple[Any, ...]:
        """The agents or layouts (`kind`) a profile names by path: each path loaded once per
        call (its own problems reported once), each agent name / layout id unique in the profile."""
        read, label = (self._read_agent, "agent name") if kind == "agents" else (self._read_layout, "layout id")
        names = UniqueNames(agent_key) if kind == "agents" else UniqueNames()
        found = []
        for index, entry in _tables(table, kind):
            entry_key = f"{key}.{kind}[{index}].path"
            path = entry.get("path")
            if isinstance(path, str):
                path = go_trim_space(path)
            if not isinstance(path, str) or not path:
                sink.add(entry_key, "is required")
                continue
            rel = normalize(path)
            if (kind, rel) not in self.loaded:
                self.loaded[kind, rel] = read(rel)
            spec, error = self.loaded[kind, rel]
            if error is not None:
                sink.add(entry_key, error.message, code=error.code)
            if spec is None:
                continue
            ident = spec.name if kind == "agents" else spec.id
            first = names.claim(ident, entry_key)
            if first is not None:
                sink.add(entry_key, f"{label} {ident!r} is already used by {first}; {label}s are unique "
                         "case-insensitively within a profile")
            found.append(spec)
        return tuple(found)

    def _read_agent(self, rel: str) -> tuple[AgentSpec | None, TreeError | None]:
        """Path problems are the bundle's (returned); problems of the folder's files are its own."""
        try:
            spec, problems = load_agent(self.tree, rel, reserved_agent_names=self.reserved, generation=self.generation)
        except TreeError as exc:
            return None, exc
        self.side.extend(problems)
        return spec, None

    def _read_layout(self, rel: str) -> tuple[LayoutSpec | None, TreeError | None]:
        """Path problems are the bundle's (returned); problems of the file itself are the layout's."""
        try:
            real = self.tree.resolve(rel)
        except TreeError as exc:
            return None, exc
        if not real.is_file():
            what = "is not a file" if real.exists() else "does not exist"
            return None, TreeError(CODE, f"{rel} {what} (a layout path names one window_layout JSON file)")
        try:
            data = self.tree.read(rel, limit=MAX_LAYOUT_BYTES, code=Code.INVALID_LAYOUT)
        except TreeError as exc:
            self.side.append(Problem(exc.code, rel, "", exc.message))
            return None, None
        layout, problems = parse_layout(data, file=rel, generation=self.generation)
        self.side.extend(problems)
        if layout is None:
            return None, None
        return LayoutSpec(id=go_trim_space(layout["id"]), display_name=go_trim_space(layout["display_name"]), path=rel,
                          document=layout), None

    @staticmethod
    def _jobs(sink: ProblemSink, table: dict[str, Any], key: str, channels: set[str]) -> tuple[JobSpec, ...]:
        """Compozy's `BundleJob.Validate` (automation `Job.Validate` with a package source)."""
        jobs = []
        for job_key, job in _named_entries(sink, table, key, "jobs", "job"):
            task = job.get("task")
            if not isinstance(task, dict):
                task = None
                _required(sink, job, job_key, "agent")
                _required(sink, job, job_key, "prompt")
            schedule, retry, fire_limit = job.get("schedule"), job.get("retry"), job.get("fire_limit")
            check_schedule(sink, schedule, f"{job_key}.schedule")
            check_retry(sink, retry, f"{job_key}.retry")
            check_fire_limit(sink, fire_limit, f"{job_key}.fire_limit")
            if task is not None and isinstance(retry, dict) and retry.get("strategy") != "none":
                sink.add(f"{job_key}.retry.strategy", 'must be "none" when the job has a task')
            if task is not None:
                check_task(sink, task, f"{job_key}.task", channels)
            enabled = job.get("enabled", True)
            jobs.append(
                JobSpec(
                    name=_text(job, "name"),
                    agent=_text(job, "agent"),
                    prompt=_text(job, "prompt"),
                    enabled=enabled if isinstance(enabled, bool) else True,
                    schedule=dict(schedule) if isinstance(schedule, dict) else {},
                    retry=dict(retry) if isinstance(retry, dict) else None,
                    fire_limit=dict(fire_limit) if isinstance(fire_limit, dict) else None,
                    task=dict(task) if task is not None else None,
                )
            )
        return tuple(jobs)

    @staticmethod
    def _triggers(sink: ProblemSink, table: dict[str, Any], key: str) -> tuple[TriggerSpec, ...]:
        """Compozy's `BundleTrigger.Validate` (automation `Trigger.Validate`, global scope)."""
        triggers = []
        for trigger_key, trigger in _named_entries(sink, table, key, "triggers", "trigger"):
            for field in ("agent", "prompt", "event"):
                _required(sink, trigger, trigger_key, field)
            if problem := prompt_template_problem(_text(trigger, "prompt")):
                sink.add(f"{trigger_key}.prompt", problem)
            event = _text(trigger, "event")
            if event == WEBHOOK:
                sink.add(f"{trigger_key}.event", "a webhook trigger needs a webhook_secret_ref, which a bundle "
                                                 "cannot declare: bundled triggers cannot listen for webhooks")
            elif _text(trigger, "endpoint_slug"):
                sink.add(f"{trigger_key}.endpoint_slug", f"must be empty when event is {event!r}")
            check_retry(sink, trigger.get("retry"), f"{trigger_key}.retry")
            check_fire_limit(sink, trigger.get("fire_limit"), f"{trigger_key}.fire_limit")
            condition = trigger.get("filter")
            check_trigger_filter(sink, condition, f"{trigger_key}.filter")
            enabled, retry, fire_limit = trigger.get("enabled", True), trigger.get("retry"), trigger.get("fire_limit")
            triggers.append(
                TriggerSpec(
                    name=_text(trigger, "name"),
                    agent=_text(trigger, "agent"),
                    prompt=_text(trigger, "prompt"),
                    event=event,
                    filter=condition if isinstance(condition, dict) else None,
                    enabled=enabled if isinstance(enabled, bool) else True,
                    retry=dict(retry) if isinstance(retry, dict) else None,
                    fire_limit=dict(fire_limit) if isinstance(fire_limit, dict) else None,
                )
            )
        return tuple(triggers)

    @staticmethod
    def _bridges(sink: ProblemSink, table: dict[str, Any], key: str,
                 provides: frozenset[str] | None) -> tuple[dict[str, Any], ...]:
        """Compozy's `validateBridges` and `BundleBridgePreset.Validate`: bridge presets named
        uniquely, each with a display_name; a routing policy that includes the thread includes
        the peer or the group (`RoutingPolicy.Validate`); each secret slot with a name and a kind;
        an extension_name or a platform unless the manifest provides `bridge.adapter`."""
        bridges = []
        for bridge_key, bridge in _named_entries(sink, table, key, "bridges", "bridge"):
            _required(sink, bridge, bridge_key, "display_name")
            policy = bridge.get("routing_policy")
            if isinstance(policy, dict) and policy.get("include_thread") is True and not (
                    policy.get("include_peer") is True or policy.get("include_group") is True):
                sink.add(f"{bridge_key}.routing_policy", "include_thread needs include_peer or include_group")
            for index, slot in _tables(bridge, "secret_slots"):
                for field in ("name", "kind"):
                    _required(sink, slot, f"{bridge_key}.secret_slots[{index}]", field)
            if provides is not None and "bridge.adapter" not in provides and not _text(bridge, "extension_name") \
                    and not _text(bridge, "platform"):
                sink.add(bridge_key, "needs an extension_name or a platform (only an extension that provides "
                                     "bridge.adapter may leave both out: the preset is then its own)")
            bridges.append(dict(bridge))
        return tuple(bridges)
