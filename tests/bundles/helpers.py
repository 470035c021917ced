"""Builders for bundle tests: extension trees with bundle files, agent folders and layouts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
import tomlkit

from pkgmgr.bundles import Bundle, load_bundles
from pkgmgr.errors import Problem, ValidationFailed

from ..support.builders import minimal_manifest, write_extension

REPO = Path(__file__).resolve().parents[2]
LAYOUTS = Path(__file__).resolve().parent / "layouts"
RESERVED = ("coordinator", "dreaming-curator")


def layout_doc(layout_id: str = "two-up", version: int = 3) -> dict[str, Any]:
    """A valid window layout (the shared vector's shape) with id `layout_id`, its document of
    `version` (3: v0.3-beta.3's, the generation that judges bundles unless told)."""
    doc = json.loads((LAYOUTS / "valid" / "shared-vector.json").read_text(encoding="utf-8"))
    doc["id"] = layout_id
    doc["document"]["version"] = version
    return doc


def agent_md(name: str = "planner", body: str | None = None, **fields: Any) -> str:
    """AGENT.md text: front matter with `name` and `fields` (dumped as JSON, which is YAML)."""
    lines = ["---", f"name: {json.dumps(name)}"]
    lines += [f"{key}: {json.dumps(value)}" for key, value in fields.items()]
    lines += ["---", "", body if body is not None else f"You are {name}. Do the work well.", ""]
    return "\n".join(lines)


def profile(name: str = "default", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, "agents": [{"path": "agents/planner"}]}
    data.update(extra)
    return data


# Compozy requires retry and fire_limit on every bundled job and trigger (RetryConfig.Validate,
# FireLimitConfig.Validate reject the zero values)
RETRY = {"strategy": "none"}
DROP: Any = object()  # job(retry=DROP): leave the field out
FIRE_LIMIT = {"max": 1, "window": "1h"}


def job(name: str = "daily", agent: str = "planner", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, "agent": agent, "prompt": "Do the daily thing.",
                            "schedule": {"mode": "every", "interval": "24h"},
                            "retry": dict(RETRY), "fire_limit": dict(FIRE_LIMIT)}
    data.update(extra)
    return {key: value for key, value in data.items() if value is not DROP}


def trigger(name: str = "on-issue", agent: str = "planner", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, "agent": agent, "prompt": "React.", "event": "linear.issue.created",
                            "retry": dict(RETRY), "fire_limit": dict(FIRE_LIMIT)}
    data.update(extra)
    return {key: value for key, value in data.items() if value is not DROP}


def bundle(name: str = "demo", profiles: Sequence[Mapping[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, "profiles": [dict(p) for p in (profiles if profiles is not None else [profile()])]}
    data.update(extra)
    return data


MANIFEST = minimal_manifest("bundle-tests", resources={"bundles": ["bundles"]})


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Add `files` to the extension at `root` (its extension.toml declares bundles = ["bundles"])."""
    return write_extension(root, MANIFEST, files)


def dump_bundle(document: Mapping[str, Any] | str, fmt: str = "toml") -> str:
    if isinstance(document, str):
        return document
    return tomlkit.dumps(copy.deepcopy(dict(document))) if fmt == "toml" else json.dumps(document, indent=2)


def write_bundle_ext(
    root: Path,
    document: Mapping[str, Any] | str | None = None,
    *,
    agents: Sequence[str] = ("planner",),
    files: Mapping[str, str | bytes] | None = None,
    fmt: str = "toml",
    bundle_file: str | None = None,
) -> Path:
    """An extension tree: one bundle file (default `bundles/main.<fmt>`), an agent folder per
    name in `agents` (agents/<name>/AGENT.md) and any extra `files`."""
    tree: dict[str, str | bytes] = {f"agents/{name}/AGENT.md": agent_md(name) for name in agents}
    target = bundle_file or f"bundles/main.{fmt}"
    tree[target] = dump_bundle(document if document is not None else bundle(), fmt)
    tree.update(files or {})
    return write_tree(root, tree)


def load(root: Path, paths: Sequence[str] = ("bundles",), reserved: Sequence[str] = RESERVED) -> tuple[Bundle, ...]:
    return load_bundles(root, paths, reserved_agent_names=reserved)


def problems(root: Path, paths: Sequence[str] = ("bundles",), reserved: Sequence[str] = RESERVED) -> list[Problem]:
    """The problems `load_bundles` raises (fails the test when it succeeds)."""
    with pytest.raises(ValidationFailed) as info:
        load(root, paths, reserved)
    return list(info.value.problems)


def find(found: Sequence[Problem], key: str, fragment: str = "", *, file: str | None = None, code: str | None = None) -> Problem:
    """The problem at `key` whose message holds `fragment`; fails with all problems listed."""
    for problem in found:
        if problem.key == key and fragment in problem.message and (file is None or problem.file == file) \
                and (code is None or problem.code == code):
            return problem
    listing = "\n".join(f"  {p.code} {p.file} {p.key}: {p.message}" for p in found)
    raise AssertionError(f"no problem at {key!r} containing {fragment!r} (file={file}, code={code}) among:\n{listing}")
