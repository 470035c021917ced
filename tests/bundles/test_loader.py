from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pkgmgr.bundles import load_bundles
from pkgmgr.errors import ValidationFailed
from pkgmgr.jsonutil import canonical_json

from .helpers import (
    DROP,
    agent_md,
    bundle,
    find,
    job,
    layout_doc,
    load,
    problems,
    profile,
    trigger,
    write_bundle_ext,
    write_tree,
)

FILE = "bundles/main.toml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "ext"


# -- bundle files ------------------------------------------------------------------------------


def test_minimal_bundle(root):
    write_bundle_ext(root)
    [loaded] = load(root)
    assert (loaded.name, loaded.description, loaded.file) == ("demo", "", FILE)
    [default] = loaded.profiles
    assert default.name == "default" and default.agent_names() == ("planner",)
    assert default.channels.primary is None and default.channels.items == ()
    assert default.layouts == default.jobs == default.triggers == ()


def test_complete_profile(root):
    document = bundle(
        description="All of it",
        profiles=[profile(
            description="everything",
            channels={"primary": "ops", "items": [{"name": "ops", "description": "Ops"}, {"name": "alerts"}]},
            agents=[{"path": "agents/planner"}, {"path": "agents/writer"}],
            layouts=[{"path": "layouts/two-up.json"}],
            jobs=[
                job("every", schedule={"mode": "every", "interval": "1h30m"},
                    retry={"strategy": "backoff", "max_retries": 3, "base_delay": "5s"},
                    fire_limit={"max": 6, "window": "1h"}),
                job("cron", agent="writer", enabled=False, schedule={"mode": "cron", "expr": "0 9 * * 1-5"}),
                job("task", agent="", prompt="", task={"title": "Weekly review"}),
                job("at", schedule={"mode": "at", "time": "2026-01-05T09:00:00+01:00"}, retry={"strategy": "none"}),
            ],
            triggers=[trigger(filter={"data.team": "MKT", "kind": "linear.issue"})],
        )],
    )
    write_bundle_ext(root, document, agents=("planner", "writer"), fmt="json",
                     files={"layouts/two-up.json": json.dumps(layout_doc())})
    [loaded] = load(root)
    [default] = loaded.profiles
    assert loaded.description == "All of it" and default.description == "everything"
    assert default.channels.primary == "ops"
    assert [c.record() for c in default.channels.items] == [{"name": "ops", "description": "Ops"},
                                                             {"name": "alerts", "description": ""}]
    assert default.agent_names() == ("planner", "writer")
    assert [(lay.id, lay.display_name, lay.path) for lay in default.layouts] == [("two-up", "Two up", "layouts/two-up.json")]
    assert default.layouts[0].document == layout_doc()
    assert [(j.name, j.enabled, j.schedule["mode"]) for j in default.jobs] == [
        ("every", True, "every"), ("cron", False, "cron"), ("task", True, "every"), ("at", True, "at")]
    assert default.jobs[2].task == {"title": "Weekly review"}
    assert default.jobs[0].retry == {"strategy": "backoff", "max_retries": 3, "base_delay": "5s"}
    assert default.jobs[0].fire_limit == {"max": 6, "window": "1h"}
    assert default.triggers[0].filter == {"data.team": "MKT", "kind": "linear.issue"}


def test_json_bundle_file(root):
    write_bundle_ext(root, fmt="json")
    [loaded] = load(root)
    assert loaded.file == "bundles/main.json"


@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_keys_as_compozys_decoders_read_them(root, fmt):
    # bundle_decode.go: unknown keys ignored, a key in another case fills its field
    daily = job(schedule={"mode": "every", "interval": "24h", "jitter": "5m"}, owner="ops")
    daily["Prompt"] = daily.pop("prompt")
    write_bundle_ext(root, bundle(profiles=[profile(jobs=[daily], audience="ops")], colour="red"), fmt=fmt)
    [loaded] = load(root)
    [daily_spec] = loaded.profiles[0].jobs
    assert daily_spec.prompt == "Do the daily thing." and "jitter" not in daily_spec.schedule
    assert "jitter" not in json.dumps(daily_spec.record())
    assert sorted(warning.split(": ")[1] for warning in loaded.warnings) == [
        "colour", "profiles[0].audience", "profiles[0].jobs[0].owner", "profiles[0].jobs[0].schedule.jitter"]


def test_bundle_table_form(root):
    document = {"bundle": {"name": "tabled", "description": "d", "profiles": [profile()]}}
    write_bundle_ext(root, document)
    [loaded] = load(root)
    assert (loaded.name, loaded.description) == ("tabled", "d")


def test_root_and_bundle_table_together(root):
    # Compozy's toBundleSpec merges them (mergeManifestValue): only differing values conflict
    write_bundle_ext(root, {"name": "x", "bundle": {"name": "y", "profiles": [profile()]}})
    find(problems(root), "name", "conflicting root and [bundle] values", file=FILE)
    write_bundle_ext(root, {"name": "x", "profiles": [profile()], "bundle": {"profiles": [profile("other")]}})
    find(problems(root), "profiles", "listed at the root and under [bundle]", file=FILE)
    write_bundle_ext(root, {"name": " x", "description": "d", "bundle": {"name": "x", "profiles": [profile()]}})
    [loaded] = load(root)
    assert (loaded.name, loaded.description, loaded.profile_names()) == ("x", "d", ("default",))


@pytest.mark.parametrize(
    ("document", "key", "fragment"),
    [
        ({"profiles": [profile()]}, "name", "a bundle needs a name"),
        ({"bundle": {"profiles": [profile()]}}, "bundle.name", "a bundle needs a name"),
        ({"name": "x"}, "profiles", "at least one profile"),
        ({"name": "x", "profiles": []}, "profiles", "at least one profile"),
        ({"bundle": {"name": "x"}}, "bundle.profiles", "at least one profile"),
        ({"name": "", "profiles": [profile()]}, "name", "a bundle needs a name"),
        ({"name": " ", "profiles": [profile()]}, "name", "a bundle needs a name"),
        ({"name": 3, "profiles": [profile()]}, "name", "must be of type string"),
        ({"name": "x", "profiles": "default"}, "profiles", "must be of type array"),
        ({"name": "x", "profiles": [profile(), profile("Default")]}, "profiles[1].name", "duplicate profile name 'Default'"),
        ({"name": "x", "profiles": [{"agents": []}]}, "profiles[0]", "'name' is required"),
        ({"name": "x", "profiles": [profile(" ")]}, "profiles[0].name", "must not be empty"),
    ],
)
def test_bundle_rules(root, document, key, fragment):
    write_bundle_ext(root, document, fmt="json")
    find(problems(root), key, fragment, file="bundles/main.json", code="invalid_bundle")


def test_bundle_names_unique_across_files(root):
    write_bundle_ext(root, bundle("Demo"), bundle_file="bundles/a.toml")
    write_tree(root, {"bundles/sub/b.json": json.dumps(bundle("demo")), "bundles/c.toml": 'name = "other"\n[[profiles]]\nname = "p"\n'})
    found = problems(root)
    assert len(found) == 1
    find(found, "name", "duplicate bundle name 'demo': bundles/a.toml already uses it", file="bundles/sub/b.json")


def test_toml_date_reported_once(root):
    write_bundle_ext(root, 'name = 2024-01-01\n[[profiles]]\nname = "p"\n')
    found = problems(root)
    assert [(p.key, p.file) for p in found] == [("name", FILE)]
    assert "write it as a string" in found[0].message


@pytest.mark.parametrize(
    ("text", "fmt", "fragment"),
    [
        ('name = "x"\nname = "y"\n', "toml", "not valid TOML"),
        ("[1, 2]", "json", "holds an object"),
        ('{"name": "x", "name": "y"}', "json", "duplicate key"),
        ('{"name": NaN}', "json", "NaN"),
        ("a = " + "[" * 500 + "]" * 500, "toml", "nested deeper"),
    ],
)
def test_undecodable_bundle_files(root, text, fmt, fragment):
    write_bundle_ext(root, text, fmt=fmt)
    found = problems(root)
    assert any(fragment in p.message and p.file == f"bundles/main.{fmt}" for p in found), [str(p) for p in found]


def test_toml_error_has_a_line(root):
    write_bundle_ext(root, 'name = "x"\n\n[[profiles]\n')
    assert problems(root)[0].line == 3


def test_oversized_bundle_file(root):
    write_bundle_ext(root, 'name = "x"\n# ' + "x" * (4 * 1024 * 1024) + "\n")
    find(problems(root), "", "larger than 4 MiB", file=FILE)


# -- channels ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("channels", "key", "fragment"),
    [
        ({"items": [{"name": "a"}]}, "channels.primary", "is required when channel items are declared"),
        ({"primary": "b", "items": [{"name": "a"}]}, "channels.primary", "'b' is not one of the channel items ('a')"),
        ({"primary": "A", "items": [{"name": "a"}]}, "channels.primary", "is not one of the channel items"),
        ({"primary": "a"}, "channels.primary", "is not one of the channel items (none declared)"),
        ({"primary": "a", "items": [{"name": "a"}, {"name": "a "}]}, "channels.items[1].name", "duplicate channel name 'a'"),
        ({"primary": "a", "items": [{"name": "a"}, {"name": ""}]}, "channels.items[1].name", "must not be empty"),
        ({"primary": "a", "items": [{"name": "a"}, {"name": "  "}]}, "channels.items[1].name", "must not be empty"),
        ({"primary": "a", "items": [{"name": "a"}, {"description": "x"}]}, "channels.items[1]", "'name' is required"),
    ],
)
def test_channel_rules(root, channels, key, fragment):
    write_bundle_ext(root, bundle(profiles=[profile(channels=channels)]))
    find(problems(root), f"profiles[0].{key}", fragment, file=FILE)


def test_channels_without_items_need_no_primary(root):
    write_bundle_ext(root, bundle(profiles=[profile(channels={})]))
    assert load(root)[0].profiles[0].channels.primary is None


# -- agents ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "code", "fragment"),
    [
        ("agents/missing", "invalid_bundle", "is not a directory"),
        ("agents", "invalid_bundle", "has no AGENT.md"),
        ("../outside", "path_escapes_root", "resolves outside the extension root"),
        ("/etc", "path_escapes_root", "relative path"),
        ("agents\\planner", "invalid_bundle", "write paths with '/'"),
    ],
)
def test_agent_path_problems_are_filed_under_the_bundle(root, path, code, fragment):
    (root.parent / "outside").mkdir(parents=True)
    write_bundle_ext(root, bundle(profiles=[profile(agents=[{"path": path}])]))
    find(problems(root), "profiles[0].agents[0].path", fragment, file=FILE, code=code)


def test_agent_path_escaping_through_a_symlink(root, tmp_path):
    write_tree(tmp_path / "elsewhere", {"AGENT.md": agent_md("thief")})
    write_bundle_ext(root, bundle(profiles=[profile(agents=[{"path": "agents/link"}])]))
    os.symlink(tmp_path / "elsewhere", root / "agents" / "link")
    find(problems(root), "profiles[0].agents[0].path", "outside", file=FILE, code="path_escapes_root")


def test_agent_names_unique_in_a_profile(root):
    write_bundle_ext(root, bundle(profiles=[profile(agents=[{"path": "agents/one"}, {"path": "agents/two"}])]),
                     agents=(), files={"agents/one/AGENT.md": agent_md("Planner"), "agents/two/AGENT.md": agent_md("planner")})
    find(problems(root), "profiles[0].agents[1].path", "agent name 'planner' is already used by profiles[0].agents[0].path")


def test_same_agent_folder_twice_in_a_profile(root):
    write_bundle_ext(root, bundle(profiles=[profile(agents=[{"path": "agents/planner"}, {"path": "agents/./planner/"}])]))
    find(problems(root), "profiles[0].agents[1].path", "is already used")


def test_agent_shared_by_profiles_is_fine_and_its_problems_reported_once(root):
    write_bundle_ext(root, bundle(profiles=[profile("a"), profile("b")]))
    [loaded] = load(root)
    assert [p.agent_names() for p in loaded.profiles] == [("planner",), ("planner",)]
    write_tree(root, {"agents/planner/AGENT.md": agent_md("planner", model=3)})
    found = problems(root)
    assert [(p.file, p.key) for p in found] == [("agents/planner/AGENT.md", "model")]


def test_reserved_agent_names_load_marked(root):
    # Compozy refuses a reserved name at activation (agent_conflict), not when it loads a bundle
    write_bundle_ext(root, agents=(), files={"agents/planner/AGENT.md": agent_md("Coordinator")})
    [agent] = load(root)[0].profiles[0].agents
    assert agent.name == "Coordinator" and agent.reserved
    write_tree(root, {"agents/planner/AGENT.md": agent_md("planner")})
    assert load(root, reserved=["PLANNER"])[0].profiles[0].agents[0].reserved
    assert not load(root, reserved=[])[0].profiles[0].agents[0].reserved


def test_agent_schema_rules(root):
    write_bundle_ext(root, bundle(profiles=[profile(agents=[{"path": "agents/planner", "name": "x"}, {}])]))
    found = problems(root)
    find(found, "profiles[0].agents[1]", "'path' is required")
    assert not [p for p in found if p.key == "profiles[0].agents[0].name"]  # unknown keys: ignored, as by Compozy


# -- layouts -----------------------------------------------------------------------------------


def test_layout_problems_are_filed_under_the_layout(root):
    broken = layout_doc()
    broken["document"]["windows"]["w1"]["placement"] = "floating"
    write_bundle_ext(root, bundle(profiles=[profile(layouts=[{"path": "layouts/broken.json"}])]),
                     files={"layouts/broken.json": json.dumps(broken)})
    found = problems(root)
    find(found, "document.desktops[0].groups[0].root.children[0].window_id", "a leaf's window must be tiled",
         file="layouts/broken.json", code="invalid_layout")


@pytest.mark.parametrize(
    ("path", "code", "fragment"),
    [
        ("layouts/missing.json", "invalid_bundle", "does not exist"),
        ("layouts", "invalid_bundle", "is not a file"),
        ("../outside.json", "path_escapes_root", "outside"),
    ],
)
def test_layout_path_problems_are_filed_under_the_bundle(root, path, code, fragment):
    write_bundle_ext(root, bundle(profiles=[profile(layouts=[{"path": path}])]),
                     files={"layouts/ok.json": json.dumps(layout_doc())})
    (root.parent / "outside.json").write_text(json.dumps(layout_doc()))
    find(problems(root), "profiles[0].layouts[0].path", fragment, file=FILE, code=code)


def test_oversized_layout(root):
    big = layout_doc()
    big["document"]["windows"]["w1"]["route"]["search"] = {"pad": "x" * (4 * 1024 * 1024)}
    write_bundle_ext(root, bundle(profiles=[profile(layouts=[{"path": "layouts/big.json"}])]),
                     files={"layouts/big.json": json.dumps(big)})
    find(problems(root), "", "larger than 4 MiB", file="layouts/big.json", code="invalid_layout")


def test_layout_ids_unique_in_a_profile(root):
    write_bundle_ext(root, bundle(profiles=[profile(layouts=[{"path": "layouts/a.json"}, {"path": "layouts/b.json"}])]),
                     files={"layouts/a.json": json.dumps(layout_doc("Grid")), "layouts/b.json": json.dumps(layout_doc("grid"))})
    find(problems(root), "profiles[0].layouts[1].path", "layout id 'grid' is already used by profiles[0].layouts[0].path")


def test_layout_shared_by_profiles(root):
    write_bundle_ext(root, bundle(profiles=[profile("a", layouts=[{"path": "layouts/a.json"}]),
                                            profile("b", layouts=[{"path": "layouts/a.json"}])]),
                     files={"layouts/a.json": json.dumps(layout_doc())})
    assert [p.layouts[0].id for p in load(root)[0].profiles] == ["two-up", "two-up"]


# -- jobs --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jobs", "key", "fragment"),
    [
        ([job("daily"), job(" daily")], "jobs[1].name", "duplicate job name 'daily'"),
        ([job(prompt="  ")], "jobs[0].prompt", "is required"),
        ([job(enabled="yes")], "jobs[0].enabled", "must be of type boolean"),
        ([{"name": "j", "agent": "a", "prompt": "p"}], "jobs[0]", "'schedule' is required"),
        ([{"name": "j", "prompt": "p", "schedule": {"mode": "every", "interval": "1h"}, "retry": {"strategy": "none"},
           "fire_limit": {"max": 1, "window": "1h"}}], "jobs[0].agent", "is required"),
        ([job(agent="")], "jobs[0].agent", "is required"),
        ([job(retry=DROP)], "jobs[0]", "'retry' is required"),
        ([job(fire_limit=DROP)], "jobs[0]", "'fire_limit' is required"),
        ([job(task={"title": "t"}, retry={"strategy": "backoff", "max_retries": 1, "base_delay": "1s"})],
         "jobs[0].retry.strategy", 'must be "none" when the job has a task'),
        ([job(task={"network_participation": {"mode": "live", "channel_strategy": "named", "channel_id": "ops"}})],
         "jobs[0].task.network_participation.channel_id", "names undeclared channel 'ops'"),
        ([job(task={"network_participation": {"channel_strategy": "named", "channel_id": "ops"}})],
         "jobs[0].task.network_participation.mode", "local participation takes no channel_strategy"),
        ([job(schedule={"mode": "every", "interval": "1h", "catch_up_policy": "later"})],
         "jobs[0].schedule.catch_up_policy", "must be one of"),
        ([job(schedule={"mode": "every", "interval": "1h", "misfire_grace_seconds": -1})],
         "jobs[0].schedule.misfire_grace_seconds", "minimum"),
        ([job(schedule={"interval": "1h"})], "jobs[0].schedule", "'mode' is required"),
        ([job(schedule={"mode": "hourly"})], "jobs[0].schedule.mode", "must be one of"),
        ([job(schedule={"mode": "cron"})], "jobs[0].schedule.expr", "needs 'expr'"),
        ([job(schedule={"mode": "cron", "expr": "@daily"})], "jobs[0].schedule.expr", "descriptors"),
        ([job(schedule={"mode": "cron", "expr": "0 9 * * * *"})], "jobs[0].schedule.expr", "exactly 5"),
        ([job(schedule={"mode": "cron", "expr": "0 99 * * *"})], "jobs[0].schedule.expr", "beyond the maximum 23"),
        ([job(schedule={"mode": "cron", "expr": "0 9 * * 7"})], "jobs[0].schedule.expr", "beyond the maximum 6"),
        ([job(schedule={"mode": "cron", "expr": "0 9 * * *", "interval": "1h"})], "jobs[0].schedule.interval",
         "belongs to schedule mode 'every', not 'cron'"),
        ([job(schedule={"mode": "every"})], "jobs[0].schedule.interval", "needs 'interval'"),
        ([job(schedule={"mode": "every", "interval": "0s"})], "jobs[0].schedule.interval", "positive"),
        ([job(schedule={"mode": "every", "interval": "-1h"})], "jobs[0].schedule.interval", "positive"),
        ([job(schedule={"mode": "every", "interval": "1 day"})], "jobs[0].schedule.interval", "not a duration"),
        ([job(schedule={"mode": "every", "interval": 3600})], "jobs[0].schedule.interval", "must be of type string"),
        ([job(schedule={"mode": "every", "interval": "1h", "time": "2026-01-05T09:00:00Z"})], "jobs[0].schedule.time",
         "belongs to schedule mode 'at'"),
        ([job(schedule={"mode": "at"})], "jobs[0].schedule.time", "needs 'time'"),
        ([job(schedule={"mode": "at", "time": "2026-01-05 09:00"})], "jobs[0].schedule.time", "RFC 3339"),
        ([job(schedule={"mode": "at", "time": "2026-02-30T09:00:00Z"})], "jobs[0].schedule.time", "does not exist"),
        ([job(schedule={"mode": "at", "time": "2026-01-05T09:00:00Z", "expr": "* * * * *"})], "jobs[0].schedule.expr",
         "belongs to schedule mode 'cron'"),
        ([job(retry={"max_retries": 3})], "jobs[0].retry", "'strategy' is required"),
        ([job(retry={"strategy": "linear"})], "jobs[0].retry.strategy", "must be one of"),
        ([job(retry={"strategy": "backoff", "max_retries": -1, "base_delay": "1s"})], "jobs[0].retry.max_retries",
         "must be positive"),
        ([job(retry={"strategy": "none", "max_retries": 2})], "jobs[0].retry.max_retries", "must be zero"),
        ([job(retry={"strategy": "backoff", "max_retries": 2.0})], "jobs[0].retry.max_retries", "must be an integer"),
        ([job(retry={"strategy": "backoff", "max_retries": True})], "jobs[0].retry.max_retries", "must be of type integer"),
        ([job(retry={"strategy": "backoff", "base_delay": "soon"})], "jobs[0].retry.base_delay", "not a duration"),
        ([job(retry={"strategy": "backoff", "base_delay": "0s"})], "jobs[0].retry.base_delay", "positive"),
        ([job(fire_limit={"max": 0, "window": "1h"})], "jobs[0].fire_limit.max", "must be positive"),
        ([job(fire_limit={"max": 2.0, "window": "1h"})], "jobs[0].fire_limit.max", "must be an integer"),
        ([job(fire_limit={"max": 2})], "jobs[0].fire_limit", "'window' is required"),
        ([job(fire_limit={"max": 2, "window": "1w"})], "jobs[0].fire_limit.window", "unknown unit"),
    ],
)
def test_job_rules(root, jobs, key, fragment):
    write_bundle_ext(root, bundle(profiles=[profile(jobs=jobs)]), fmt="json")
    find(problems(root), f"profiles[0].{key}", fragment, file="bundles/main.json", code="invalid_bundle")


def test_job_agent_references_are_not_checked_at_install(root):
    write_bundle_ext(root, bundle(profiles=[profile(jobs=[job(agent="someone-else")],
                                                    triggers=[trigger(agent="nobody")])]))
    [loaded] = load(root)
    assert loaded.profiles[0].jobs[0].agent == "someone-else"


# -- triggers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("triggers", "key", "fragment"),
    [
        ([trigger("on-issue"), trigger("on-issue ")], "triggers[1].name", "duplicate trigger name 'on-issue'"),
        ([trigger(event="webhook")], "triggers[0].event", "cannot listen for webhooks"),
        ([trigger(event=" webhook ")], "triggers[0].event", "cannot listen for webhooks"),
        ([trigger(event=" ")], "triggers[0].event", "is required"),
        ([trigger(prompt="")], "triggers[0].prompt", "is required"),
        ([trigger(agent=" ")], "triggers[0].agent", "is required"),
        ([trigger(retry=DROP)], "triggers[0]", "'retry' is required"),
        ([trigger(fire_limit={"max": 0, "window": "1h"})], "triggers[0].fire_limit.max", "must be positive"),
        ([trigger(endpoint_slug="hook")], "triggers[0].endpoint_slug", "must be empty when event is"),
        ([trigger(filter={"team": "MKT"})], "triggers[0].filter.team", "unsupported filter path"),
        ([trigger(filter={"data.labels": ["a"]})], "triggers[0].filter.data.labels", "must be of type string"),
        ([{"name": "t", "agent": "a", "prompt": "p"}], "triggers[0]", "'event' is required"),
        ([trigger(filter="team=MKT")], "triggers[0].filter", "must be of type object"),
    ],
)
def test_trigger_rules(root, triggers, key, fragment):
    write_bundle_ext(root, bundle(profiles=[profile(triggers=triggers)]), fmt="json")
    find(problems(root), f"profiles[0].{key}", fragment, file="bundles/main.json")


def test_names_of_different_kinds_may_match(root):
    write_bundle_ext(root, bundle(profiles=[profile(channels={"primary": "sync", "items": [{"name": "sync"}]},
                                                    jobs=[job("sync")], triggers=[trigger("sync")])]))
    assert load(root)


def test_names_are_unique_per_profile_only(root):
    write_bundle_ext(root, bundle(profiles=[profile("a", jobs=[job("sync")], triggers=[trigger("t")]),
                                            profile("b", jobs=[job("sync")], triggers=[trigger("t")])]))
    assert len(load(root)[0].profiles) == 2


# -- discovery ---------------------------------------------------------------------------------


def test_directories_walk_sorted_and_count_toml_and_json_only(root):
    write_bundle_ext(root, bundle("zeta"), bundle_file="bundles/z.toml")
    write_tree(root, {
        "bundles/a/inner.json": json.dumps(bundle("inner")),
        "bundles/b.toml": 'name = "beta"\n[[profiles]]\nname = "p"\n',
        "bundles/notes.md": "ignored",
        "bundles/data.yaml": "ignored: true",
    })
    assert [b.name for b in load(root)] == ["inner", "beta", "zeta"]
    assert [b.file for b in load(root)] == ["bundles/a/inner.json", "bundles/b.toml", "bundles/z.toml"]


def test_entries_keep_manifest_order_and_files_load_once(root):
    write_bundle_ext(root, bundle("main"))
    write_tree(root, {"extra/one.toml": 'name = "one"\n[[profiles]]\nname = "p"\n'})
    os.symlink(root / "bundles" / "main.toml", root / "extra" / "alias.toml")
    loaded = load(root, ["extra/one.toml", "bundles", "bundles/main.toml", "extra"])
    assert [b.name for b in loaded] == ["one", "main"]


def test_no_bundle_paths(root):
    root.mkdir()
    assert load_bundles(root, [], reserved_agent_names=[]) == ()


@pytest.mark.parametrize(
    ("entry", "code", "fragment"),
    [
        ("bundles/missing.toml", "invalid_bundle", "does not exist"),
        ("bundles/notes.md", "invalid_bundle", "is not a bundle file"),
        ("../outside", "path_escapes_root", "outside the extension root"),
        ("/etc", "path_escapes_root", "relative path"),
        ("", "invalid_bundle", "non-empty relative path"),
        (7, "invalid_bundle", "non-empty relative path"),
    ],
)
def test_bad_entries_are_filed_under_the_manifest(root, entry, code, fragment):
    write_bundle_ext(root, files={"bundles/notes.md": "x"})
    (root.parent / "outside").mkdir()
    with pytest.raises(ValidationFailed) as info:
        load_bundles(root, ["bundles", entry], reserved_agent_names=[], manifest_file="extension.json")
    find(list(info.value.problems), "resources.bundles[1]", fragment, file="extension.json", code=code)


def test_symlink_escaping_from_a_bundles_directory(root, tmp_path):
    write_bundle_ext(root)
    write_tree(tmp_path / "foreign", {"evil.toml": 'name = "evil"\n[[profiles]]\nname = "p"\n'})
    os.symlink(tmp_path / "foreign", root / "bundles" / "link")
    os.symlink(tmp_path / "foreign" / "evil.toml", root / "bundles" / "evil.toml")
    found = problems(root)
    assert sorted((p.code, p.file) for p in found) == [("path_escapes_root", "bundles/evil.toml"),
                                                       ("path_escapes_root", "bundles/link")]


# -- everything at once ------------------------------------------------------------------------


def test_all_problems_of_all_files_are_reported_together(root):
    broken_layout = layout_doc()
    broken_layout["document"]["desktops"][0]["order"] = 3
    write_bundle_ext(
        root,
        bundle("one", profiles=[profile(
            channels={"items": [{"name": "x"}]},
            layouts=[{"path": "layouts/bad.json"}],
            jobs=[job(schedule={"mode": "cron", "expr": "nope"})],
            triggers=[trigger(event="webhook")],
        )]),
        bundle_file="bundles/a.toml",
        agents=(),
        files={
            "agents/planner/AGENT.md": "---\nname: planner\nmood: happy\n---\nbody\n",
            "layouts/bad.json": json.dumps(broken_layout),
            "bundles/b.json": json.dumps(bundle("ONE", profiles=[])),
        },
    )
    with pytest.raises(ValidationFailed) as info:
        load(root)
    found = list(info.value.problems)
    assert {(p.file, p.key) for p in found} == {
        ("bundles/a.toml", "profiles[0].channels.primary"),
        ("bundles/a.toml", "profiles[0].jobs[0].schedule.expr"),
        ("bundles/a.toml", "profiles[0].triggers[0].event"),
        ("agents/planner/AGENT.md", "mood"),
        ("layouts/bad.json", "document.desktops"),
        ("bundles/b.json", "profiles"),
        ("bundles/b.json", "name"),
    }
    assert info.value.code == "invalid_bundle"
    assert found[0].file == "bundles/a.toml"  # a file's own problems come before those of the files it names
    assert {p.code for p in found} == {"invalid_bundle", "invalid_layout"}
    assert len(info.value.details["problems"]) == len(found)
    assert "bundles/a.toml: profiles[0].jobs[0].schedule.expr:" in info.value.message


def test_loading_is_deterministic(root):
    write_bundle_ext(root, bundle(profiles=[profile(jobs=[job()], triggers=[trigger()],
                                                    channels={"primary": "a", "items": [{"name": "a"}]})]))
    first, second = load(root), load(root)
    assert first == second

    def records(bundles):
        p = bundles[0].profiles[0]
        return canonical_json([r.record() for r in (*p.agents, *p.jobs, *p.triggers, *p.channels.items)])

    assert records(first) == records(second)


def test_lone_surrogates_in_paths_and_names_read_as_go_reads_them(root):
    """encoding/json makes each lone surrogate escape U+FFFD: the paths name files that are not
    there, the name is a name."""
    text = json.dumps(bundle("x\ud800", profiles=[profile(agents=[{"path": "agents/\ud800"}],
                                                          layouts=[{"path": "\udc00.json"}])]))
    write_bundle_ext(root, text, fmt="json")
    found = problems(root)
    assert not [p for p in found if p.key == "name"]
    find(found, "profiles[0].agents[0].path", "agents/\ufffd")
    find(found, "profiles[0].layouts[0].path", "\ufffd.json")


def test_layout_ids_that_differ_only_by_whitespace_do_not_reach_activation(tmp_path):
    """Two layouts `two-up` and `two-up ` would project the same resource id (an internal
    error at activation); Compozy trims ids, so the second is a duplicate, refused at load."""
    spaced = layout_doc("two-up ")
    root = write_bundle_ext(tmp_path / "ext", bundle(profiles=[profile(layouts=[{"path": "layouts/a.json"},
                                                                                 {"path": "layouts/b.json"}])]),
                            files={"layouts/a.json": json.dumps(layout_doc("two-up")),
                                   "layouts/b.json": json.dumps(spaced)})
    found = problems(root)
    find(found, "profiles[0].layouts[1].path", "layout id 'two-up' is already used", file="bundles/main.toml")
