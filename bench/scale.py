"""`python -m bench registry-scale --entries N[,N...]`: registry maintenance and search at scale
(SPEC 12, issue 30): a format-2 index of N entries generated directly (the files `registry
build` would write, without running it), then, each as a fresh `pkgmgr` process with its wall
time and peak RSS (the child's `ru_maxrss`):

- `registry build` (a full walk: every entry parsed, every shard rendered) and a full `registry
  validate`; `registry validate --changed-since` after one publish in a git checkout (only the
  changed entry);
- `registry publish` of one new version of an existing entry, `yank`, `unyank`;
- `ext search` as a fresh process with a warm local index, and the bytes a refresh fetches from a
  loopback static server after one publish (the server's log), against the first (cold) sync.

Targets (SPEC 12): publish/yank/unyank <= 1 s and <= 100 MB; build and full validate <= 60 s and
<= 500 MB; search < 0.25 s warm; refresh bytes proportional to the change. The million-entry run
writes ~1 M files (~4 GB of blocks): a benchmark, never a test.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from bench.registry import BenchError
from bench.support import (
    StaticServer,
    clean_env,
    manifest_toml,
    pkgmgr_command,
    small_files,
    write_archive,
    write_config,
)

TARGET = "bench-target"
TERM = "widget-000012"  # in the descriptions of entries 120..129 (`_description`)
PREFIXES = ("compozy", "team", "acme", "agent", "tools")  # crowded prefixes: the layout must spread them


def _name(i: int) -> str:
    return f"{PREFIXES[i % len(PREFIXES)]}-ext-{i:07d}"


def _description(i: int) -> str:
    return f"Benchmark extension {i}, widget-{i // 10:06d}"


def generate(root: Path, count: int, target_sha: str, target_size: int) -> float:
    """A format-2 index of `count` entries (one of them `bench-target`, the others pointing at
    archives never fetched), written directly; returns the seconds it took."""
    from pkgmgr.registry.index_format import latest_version
    from pkgmgr.registry.layout import SHARDS_FILE, chunk_path, entry_path, shard_of, summary_path
    from pkgmgr.registry.summary import Change, render_chunk, render_shard, render_shards, shard_info

    start = time.perf_counter()
    fake = hashlib.sha256(b"never fetched").hexdigest()
    serial = count
    by_shard: dict[str, list[dict[str, Any]]] = {}
    made: set[str] = set()
    for i in range(count):
        name = TARGET if i == 0 else _name(i)
        description = "the benchmark's real extension" if i == 0 else _description(i)
        sha, size = (target_sha, target_size) if i == 0 else (fake, 1000)
        url = f"archives/{name}-1.0.0.tar.gz"
        text = (f'name = "{name}"\ndescription = "{description}"\ntier = "community"\n\n[[versions]]\n'
                f'version = "1.0.0"\nurl = "{url}"\nsha256 = "{sha}"\nsize = {size}\n'
                f'min_compozy_version = "0.5.0"\nnetwork_digest = ""\npermissions = []\n'
                f"published = 2026-11-29T00:00:00Z\nyanked = false\n")
        rel = entry_path(name, 2)
        folder = rel.rsplit("/", 1)[0]
        if folder not in made:
            (root / folder).mkdir(parents=True, exist_ok=True)
            made.add(folder)
        with open(root / rel, "w", encoding="utf-8") as handle:
            handle.write(text)
        by_shard.setdefault(shard_of(name), []).append({
            "name": name, "description": description, "tier": "community",
            "latest": latest_version([("1.0.0", False)]),
            "versions": [{"version": "1.0.0", "yanked": False, "min_compozy_version": "0.5.0"}]})
    infos = {}
    (root / "index" / "summary").mkdir(parents=True, exist_ok=True)
    for shard, records in by_shard.items():
        data = render_shard(shard, records)
        (root / summary_path(shard)).write_bytes(data)
        infos[shard] = shard_info(data, len(records))
    (root / "index" / "changes").mkdir(parents=True, exist_ok=True)
    chunk = (serial - 1) // 64
    (root / chunk_path(chunk)).write_bytes(render_chunk(chunk, [Change(serial, "reset", None, None)]))
    (root / SHARDS_FILE).write_bytes(render_shards(serial, infos))
    (root / "registry.toml").write_text(
        f'[registry]\nformat = 2\nname = "bench"\ndescription = "benchmark registry"\nserial = {serial}\n')
    (root / ".gitignore").write_text(".pkgmgr-registry.lock\n")
    return time.perf_counter() - start


@dataclass
class Run:
    seconds: float
    rss_mb: float
    stdout: str


def _rss_runner() -> list[str]:
    """Each measured command runs under a small wrapper that reports its own child's peak RSS
    (RUSAGE_CHILDREN of the harness would keep the largest child ever)."""
    code = ("import subprocess,sys,resource;"
            "p=subprocess.run(sys.argv[1:]);"
            "r=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
            "sys.stderr.write('\\nBENCH-RSS-KB %d\\n' % r);sys.exit(p.returncode)")
    import sys

    return [sys.executable, "-c", code]


def measure(command: Sequence[Any], env: dict[str, str], cwd: Path, expect: int = 0) -> Run:
    start = time.perf_counter()
    proc = subprocess.run([*_rss_runner(), *map(str, command)], env=env, cwd=cwd, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != expect:
        raise BenchError(f"{' '.join(map(str, command))} exited {proc.returncode}: {err[-2000:]}")
    marker = err.rsplit("BENCH-RSS-KB ", 1)
    rss = int(marker[1].split()[0]) / 1024 if len(marker) == 2 else float("nan")
    return Run(seconds, rss, proc.stdout.decode())


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def run_size(count: int, workdir: Path, *, with_git: bool = True) -> dict[str, Any]:
    """Every measurement at one size (module docstring)."""
    pkgmgr = pkgmgr_command()
    env = clean_env(workdir)
    root = workdir / f"index-{count}"
    www = workdir / f"archive-{count}"
    files = small_files(TARGET, 5)

    def archive(label: str, version: str) -> tuple[str, int]:
        return write_archive(www / f"{label}.tar.gz", TARGET, version,
                             {**files, "extension.toml": manifest_toml(TARGET, version)})

    sha, size = archive("a", "1.0.0")
    figures: dict[str, Any] = {"entries": count}
    figures["generate_s"] = generate(root, count, sha, size)
    archive("b", "1.1.0")
    new_archive = www / "b.tar.gz"

    def cli(*args: Any, expect: int = 0) -> Run:
        return measure([*pkgmgr, *args], env, workdir, expect)

    build = cli("registry", "build", root, "-o", "json")
    figures["build"] = (build.seconds, build.rss_mb)
    validate = cli("registry", "validate", root, "-o", "json")
    figures["validate"] = (validate.seconds, validate.rss_mb)
    if with_git:
        start = time.perf_counter()
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "generated")
        figures["git_setup_s"] = time.perf_counter() - start
    publish = cli("registry", "publish", new_archive, "--index", root, "--url",
                  f"https://example.invalid/{TARGET}-1.1.0.tar.gz", "-o", "json")
    figures["publish"] = (publish.seconds, publish.rss_mb)
    if with_git:
        changed = cli("registry", "validate", root, "--changed-since", "HEAD", "-o", "json")
        figures["validate_changed"] = (changed.seconds, changed.rss_mb)
    yank = cli("registry", "yank", root, TARGET, "1.1.0", "-o", "json")
    figures["yank"] = (yank.seconds, yank.rss_mb)
    unyank = cli("registry", "unyank", root, TARGET, "1.1.0", "-o", "json")
    figures["unyank"] = (unyank.seconds, unyank.rss_mb)

    home = workdir / f"home-{count}"
    with StaticServer(root) as server:
        write_config(home, registries={"bench": server.url})
        args = ["--home", home, "ext", "search", TERM, "-o", "json"]
        server.take_hits()
        cold = cli(*args)
        figures["sync_cold"] = (cold.seconds, cold.rss_mb, sum(h.sent for h in server.take_hits()))
        matches = len(json.loads(cold.stdout)["results"])
        searches = []
        for _ in range(5):
            searches.append(cli(*args).seconds)
        server.take_hits()
        figures["search_warm_s"] = sorted(searches)[len(searches) // 2]
        figures["search_matches"] = matches
        archive("c", "1.2.0")
        cli("registry", "publish", www / "c.tar.gz", "--index", root, "--url",
            f"https://example.invalid/{TARGET}-1.2.0.tar.gz", "-o", "json")
        server.take_hits()
        refresh = cli("--home", home, "registry", "refresh", "bench", "-o", "json")
        hits = server.take_hits()
        figures["refresh"] = (refresh.seconds, sum(h.sent for h in hits), len(hits))
    return figures


def render_table(rows: list[dict[str, Any]], load: str) -> str:
    def pair(value: Any) -> str:
        return f"{value[0]:.2f} s, {value[1]:.0f} MB" if value else "-"

    lines = ["| entries | generate | `registry build` | `registry validate` | `validate --changed-since` | publish | "
             "yank | unyank | search (warm, fresh process) | first sync (cold) | refresh after one publish |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cold = row["sync_cold"]
        refresh = row["refresh"]
        lines.append(
            f"| {row['entries']:,} | {row['generate_s']:.1f} s | {pair(row['build'])} | {pair(row['validate'])} | "
            f"{pair(row.get('validate_changed'))} | {pair(row['publish'])} | {pair(row['yank'])} | "
            f"{pair(row['unyank'])} | {row['search_warm_s'] * 1000:.0f} ms ({row['search_matches']} matches) | "
            f"{cold[0]:.1f} s, {cold[2] / (1 << 20):.1f} MiB fetched | "
            f"{refresh[0] * 1000:.0f} ms, {refresh[1] / 1024:.1f} KiB in {refresh[2]} requests |")
    return "\n".join(lines) + f"\n\nload: {load}\n"


def run_scale(sizes: Sequence[int], *, keep: bool = False, git_limit: int = 100_000) -> str:
    """Run every size in turn (a fresh directory each, removed unless `keep`); the table.
    `validate --changed-since` needs the index in git: above `git_limit` entries the `git add`
    of every file (minutes, gigabytes of objects) is skipped and so is that column."""
    rows = []
    loads = []
    base = Path(tempfile.mkdtemp(prefix="bench-registry-scale-"))
    try:
        for count in sizes:
            loads.append(os.getloadavg()[0])
            workdir = base / str(count)
            workdir.mkdir()
            rows.append(run_size(count, workdir, with_git=count <= git_limit))
            loads.append(os.getloadavg()[0])
            if not keep:
                shutil.rmtree(workdir, ignore_errors=True)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    load = f"1-minute load average {min(loads):.1f}–{max(loads):.1f} on {os.cpu_count()} cores during the runs"
    return render_table(rows, load)
