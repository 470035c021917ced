"""`registry-scale` and `registry-search`: a registry of 10,000 extensions costs an install no
more than one of 10 (SPEC 12: the same requests, time within 10 %), and `ext search` over
10,000 entries answers in < 0.5 s warm.

Both registries are static HTTP registries on one loopback server (`/big/` and `/small/`),
listing the same extension `bench-target` with the same archive; the other entries point at
archives that are never fetched. Each install starts from empty caches (untimed reset) and
runs in this process: what is compared is the operation, not interpreter start-up.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from bench.registry import BenchError, Case, Env, Target, benchmark
from bench.support import (
    Hit,
    Release,
    StaticServer,
    clean_env,
    pkgmgr_command,
    small_files,
    write_archive,
    write_config,
    write_registry,
)

BIG, SMALL = 10_000, 10
TARGET = "bench-target"
SEARCH_TERM = "ext-001"  # matches bench-ext-00100 ... bench-ext-00199


def _registry(root: Path, count: int, archive: Release) -> None:
    """`count` entries: `bench-target` (a real archive) and `count - 1` others."""
    fake = hashlib.sha256(b"never fetched").hexdigest()
    releases = [archive] + [Release(f"bench-ext-{i:05d}", "1.0.0", f"archives/bench-ext-{i:05d}-1.0.0.tar.gz",
                                    fake, 1000) for i in range(count - 1)]
    write_registry(root, releases)


def _shape(hits: list[Hit]) -> Counter[str]:
    """Requests by kind (registry.toml, entry, index, archive) and status."""
    kinds: Counter[str] = Counter()
    for hit in hits:
        path = hit.path.split("/", 2)[-1]
        kind = ("archive" if path.startswith("archives/") else "entry" if path.startswith("extensions/")
                else path)
        kinds[f"{kind} {hit.status}"] += 1
    return kinds


def _setup(env: Env, big: int) -> tuple[Path, Release]:
    """The server root with `big/` and `small/` registries sharing the target's archive."""
    root = env.workdir / "www"
    name_files = small_files(TARGET, 60)
    sha, size = write_archive(root / "archive.tar.gz", TARGET, "1.0.0", name_files)
    release = Release(TARGET, "1.0.0", f"archives/{TARGET}-1.0.0.tar.gz", sha, size)
    for label, count in (("big", big), ("small", SMALL)):
        _registry(root / label, count, release)
        (root / label / release.url).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / "archive.tar.gz", root / label / release.url)
    return root, release


@benchmark("registry-scale", target=Target("time within 10 % of a 10-entry registry, same requests", max_ratio=1.1),
           summary=f"ext install {TARGET} from a {BIG:,}-entry registry vs a {SMALL}-entry one (in-process)")
def registry_scale(env: Env) -> Iterator[Case]:
    big = 200 if env.smoke else BIG
    root, _ = _setup(env, big)
    shapes: dict[str, Counter[str]] = {}
    with StaticServer(root) as server:
        homes = {label: env.workdir / f"home-{label}" for label in ("big", "small")}
        for label, home in homes.items():
            write_config(home, registries={"bench": server.url + label + "/"})

        def install(label: str) -> None:
            server.take_hits()
            env.pkgmgr("ext", "install", TARGET, "--yes", "-o", "json", home=homes[label])
            shapes[label] = _shape(server.take_hits())

        def reset(label: str) -> None:
            env.pkgmgr("ext", "remove", TARGET, "-o", "json", home=homes[label], expect=(0, 5))
            shutil.rmtree(homes[label] / "cache", ignore_errors=True)

        def verdict() -> tuple[bool, str]:
            same = shapes.get("big") == shapes.get("small") and bool(shapes.get("big"))
            text = ", ".join(f"{count} x {kind}" for kind, count in sorted(shapes.get("big", Counter()).items()))
            if same:
                return True, f"the same requests against both registries: {text}"
            return False, f"requests differ: big {dict(shapes.get('big', {}))}, small {dict(shapes.get('small', {}))}"

        yield Case(subject=lambda: install("big"), baseline=lambda: install("small"),
                   reset=lambda: reset("big"), reset_baseline=lambda: reset("small"),
                   baseline_label=f"the same install from a {SMALL}-entry registry",
                   facts={"registries": f"{big:,} and {SMALL} entries, static HTTP on 127.0.0.1",
                          "each run": "cold caches: registry files and the download fetched again"},
                   verdict=verdict, min_repeat=25)  # ~0.1 s runs on a shared machine: many pairs


@benchmark("registry-search", target=Target("< 0.25 s warm, fresh process", max_seconds=0.25),
           summary=f"ext search over {BIG:,} entries, warm (index.json cached, revalidated), fresh process")
def registry_search(env: Env) -> Iterator[Case]:
    big = 200 if env.smoke else BIG
    root, _ = _setup(env, big)
    index_bytes = (root / "big" / "index.json").stat().st_size
    with StaticServer(root) as server:
        home = env.workdir / "home"
        write_config(home, registries={"bench": server.url + "big/"})
        args = ["--home", home, "ext", "search", SEARCH_TERM, "-o", "json"]
        found = json.loads(env.pkgmgr(*args[2:], home=home))  # fills the cache: every timed run is warm
        matches = len(found["results"])
        variables = clean_env(env.workdir)
        command = [str(c) for c in (*pkgmgr_command(), *args)]
        last: list[Hit] = []

        def search() -> None:
            server.take_hits()
            proc = subprocess.run(command, env=variables, cwd=env.workdir, capture_output=True, check=False)
            if proc.returncode != 0:
                raise BenchError(f"ext search exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")
            last[:] = server.take_hits()

        def in_process() -> dict[str, Any]:
            times = []
            for _ in range(5):
                start = time.perf_counter()
                env.pkgmgr(*args[2:], home=home)
                times.append(time.perf_counter() - start)
            return {"the same search in-process (no interpreter start-up), median of 5":
                    f"{statistics.median(times) * 1000:.1f} ms"}

        def verdict() -> tuple[bool, str]:
            ok = bool(last) and all(hit.conditional and hit.status == 304 for hit in last)
            return ok, (f"warm: {len(last)} conditional requests, all answered 304" if ok
                        else f"not warm: {[(h.path, h.status, h.conditional) for h in last]}")

        yield Case(subject=search, baseline=None,
                   facts={"index.json": f"{big:,} extensions, {index_bytes / (1 << 20):.1f} MiB",
                          "term": f"{SEARCH_TERM!r} ({matches} matches)",
                          "pkgmgr": "subprocess: pkgmgr ext search TERM -o json"},
                   after=in_process, verdict=verdict, min_repeat=9)
