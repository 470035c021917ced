"""`sync`: `pkgmgr sync` of an already-synced workspace with 50 extensions takes <= 0.2 s as a
fresh process (SPEC 12).

The workspace declares 50 extensions from a team registry (static HTTP on loopback) and one
path extension, and activates the bundle of one of them; setup approves it (`pkgmgr trust`)
and syncs it once. The timed subject is a second `sync` as a fresh process (start-up included,
what SPEC 12 counts): check the approval and the store, read pkgmgr.toml and pkgmgr.lock,
compare with the installed records, nothing to do. The operation alone (in-process) is
reported after the timed runs, and the verdict checks that a synced workspace
costs no registry request at all.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from typing import Any, Iterator

from bench.registry import BenchError, Case, Env, Target, benchmark
from bench.support import StaticServer, bench_registry, clean_env, pkgmgr_command

EXTENSIONS = 50


@benchmark("sync", target=Target("<= 0.2 s, fresh process", max_seconds=0.2),
           summary=f"pkgmgr sync of an already-synced workspace with {EXTENSIONS} extensions (fresh process)")
def sync(env: Env) -> Iterator[Case]:
    count = 5 if env.smoke else EXTENSIONS
    registry, names, _ = bench_registry(env.workdir, "bench-ws", count)
    home = env.workdir / "home"
    ws = env.workdir / "ws"
    tool = ws / "tools" / "local-tool"
    tool.mkdir(parents=True)
    (tool / "extension.toml").write_text('name = "local-tool"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\n',
                                         encoding="utf-8")
    with StaticServer(registry) as server:
        lines = ["[registries]", f'team = "{server.url}"', "", "[extensions]"]
        lines += [f'{name} = ">=1.0"' for name in names]
        lines += ['local-tool = { path = "tools/local-tool" }']
        (ws / "pkgmgr.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        env.pkgmgr("--workspace", ws, "trust", "-o", "json", home=home)
        first = json.loads(env.pkgmgr("--workspace", ws, "sync", "--yes", "-o", "json", home=home))
        installed = len(first.get("installed", []))
        if installed != count + 1:
            raise BenchError(f"the first sync installed {installed} extensions, expected {count + 1}")
        server.take_hits()
        outcome: dict[str, Any] = {}

        command = [str(c) for c in (*pkgmgr_command(), "--home", home, "--workspace", ws, "sync", "--yes",
                                    "-o", "json")]
        variables = clean_env(env.workdir)

        def again() -> None:
            proc = subprocess.run(command, env=variables, cwd=env.workdir, capture_output=True, check=True)
            outcome["doc"] = json.loads(proc.stdout)

        def verdict() -> tuple[bool, str]:
            hits = server.take_hits()
            doc = outcome.get("doc", {})
            changed = doc.get("installed") or doc.get("removed")
            ok = not hits and not changed
            return ok, ("nothing to do, and no request reached the registry" if ok
                        else f"{len(hits)} registry requests; changes: {changed}")

        def in_process() -> dict[str, Any]:
            times = []
            for _ in range(5):
                start = time.perf_counter()
                env.pkgmgr("--workspace", ws, "sync", "--yes", "-o", "json", home=home)
                times.append(time.perf_counter() - start)
            return {"the operation in-process (no start-up), median of 5": f"{statistics.median(times) * 1000:.0f} ms"}

        yield Case(subject=again, facts={"workspace": f"{count} registry extensions + 1 path extension, synced"},
                   after=in_process, verdict=verdict, min_repeat=9)
