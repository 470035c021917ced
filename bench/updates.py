"""`update-check`: a second `ext update --check` over 50 installed extensions sends only
conditional requests and receives no bodies (SPEC 12), and takes at most half the time of the
first (issue 8).

A static HTTP registry on loopback lists 50 extensions; all are installed at 1.0.0 and 10 of
them have a 1.1.0. The baseline is a first check (the registry cache emptied before each run,
untimed): registry.toml and 50 entry files with their bodies. The subject is a second check:
the same 51 requests, each conditional, each answered 304. Both run in this process (the
operation; interpreter start-up, identical for both, would only dilute the ratio) and the
after-figures give the same pair as fresh processes.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import time
from typing import Any, Iterator

from bench.registry import BenchError, Case, Env, Target, benchmark
from bench.support import Hit, StaticServer, bench_registry, clean_env, pkgmgr_command, write_config

INSTALLED, NEWER = 50, 10


@benchmark("update-check", target=Target("<= 0.5x the first check, conditional requests only", max_ratio=0.5),
           summary=f"a second ext update --check over {INSTALLED} installed extensions (in-process)")
def update_check(env: Env) -> Iterator[Case]:
    count = 6 if env.smoke else INSTALLED
    every = max(1, count // NEWER)
    newer = {f"bench-upd-{i:02d}" for i in range(0, count, every)[:NEWER]}
    registry, names, _ = bench_registry(env.workdir, "bench-upd", count, newer=newer)
    home = env.workdir / "home"
    last: dict[str, list[Hit]] = {}
    with StaticServer(registry) as server:
        write_config(home, registries={"bench": server.url})
        env.pkgmgr("ext", "install", *[f"{n}@1.0.0" for n in names], "--yes", "-o", "json", home=home)
        env.pkgmgr("ext", "update", "--all", "--check", "-o", "json", home=home)  # warm for the subject

        def check(which: str) -> None:
            server.take_hits()
            env.pkgmgr("ext", "update", "--all", "--check", "-o", "json", home=home)
            last[which] = server.take_hits()

        def forget() -> None:
            shutil.rmtree(home / "cache" / "registries", ignore_errors=True)

        def verdict() -> tuple[bool, str]:
            second = last.get("second", [])
            first = last.get("first", [])
            plain = [h for h in second if not h.conditional or h.status != 304 or h.sent]
            if not second or plain:
                return False, f"the second check sent {len(plain)} requests that were not conditional 304s: {plain[:3]}"
            return True, (f"second check: {len(second)} requests, all conditional, all 304, no body "
                          f"(the first: {len(first)} requests, {sum(h.sent for h in first)} body bytes)")

        def cold() -> dict[str, Any]:
            variables = clean_env(env.workdir)
            command = [str(c) for c in (*pkgmgr_command(), "--home", home, "ext", "update", "--all", "--check",
                                        "-o", "json")]
            times: dict[str, list[float]] = {"first": [], "second": []}
            for _ in range(3):
                for which in ("first", "second"):
                    if which == "first":
                        forget()
                    start = time.perf_counter()
                    proc = subprocess.run(command, env=variables, cwd=env.workdir, capture_output=True, check=False)
                    times[which].append(time.perf_counter() - start)
                    if proc.returncode != 0:
                        raise BenchError(f"ext update --check exited {proc.returncode}")
            first, second = statistics.median(times["first"]), statistics.median(times["second"])
            return {"as fresh processes (median of 3)":
                    f"first {first * 1000:.0f} ms, second {second * 1000:.0f} ms, ratio {second / first:.2f}x"}

        yield Case(subject=lambda: check("second"), baseline=lambda: check("first"), reset_baseline=forget,
                   baseline_label="the first check (no cached registry files: 51 bodies)",
                   facts={"installed": f"{count} from a static HTTP registry on 127.0.0.1, {len(newer)} with a "
                                       "newer version"},
                   after=cold, verdict=verdict)
