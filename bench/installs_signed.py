"""`install-many-signed`: what TUF verification costs (SPEC 12: verifying a signed registry's
metadata adds at most 20 % to a 20-extension install).

The same 20 extensions are published into one index, which is then signed (`pkgmgr.registry.
signing`, keys in the work directory); two homes add it from the same loopback server, one
with `--root` (signed) and one without. Subject and baseline are the same `ext install` command
as a subprocess, from cold caches; the signed home also forgets its trusted timestamp, snapshot
and targets between runs (its pinned root stays, as on a real machine), so every run fetches and
verifies all of them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

from bench.installs import FILES, MANY
from bench.registry import BenchError, Case, Env, Target, benchmark
from bench.support import StaticServer, bench_registry, clean_env, pkgmgr_command, run


def _reset(env: Env, home: Path, names: list[str], server: StaticServer, *, signed: bool) -> None:
    env.pkgmgr("ext", "remove", *names, "-o", "json", home=home, expect=(0, 5))
    shutil.rmtree(home / "cache", ignore_errors=True)
    if signed:
        for trusted in (home / "tuf").glob("*/*.json"):
            if trusted.name != "root.json":
                trusted.unlink()
    server.take_hits()
    if server.errors:
        raise BenchError(f"the loopback server failed: {server.errors[0]}")


@benchmark("install-many-signed", target=Target("<= 1.2x the same install, unsigned", max_ratio=1.2),
           summary=f"ext install of {MANY} extensions from a TUF-signed registry vs the same registry unsigned")
def install_many_signed(env: Env) -> Iterator[Case]:
    from pkgmgr.registry.signing import init_signing

    count = 3 if env.smoke else MANY
    registry, names, _ = bench_registry(env.workdir, "bench-signed", count, files=FILES)
    init_signing(registry, env.workdir / "keys")
    signed_home, plain_home = env.workdir / "home-signed", env.workdir / "home-plain"
    with StaticServer(registry) as server:
        env.pkgmgr("registry", "add", "bench", server.url, "--root", registry / "metadata" / "1.root.json",
                   home=signed_home)
        env.pkgmgr("registry", "add", "bench", server.url, home=plain_home)

        def command(home: Path) -> list:
            return [*pkgmgr_command(), "--home", home, "ext", "install", *names, "--yes", "-o", "json"]

        def verdict() -> tuple[bool, str]:
            found = env.pkgmgr("ext", "list", "-o", "json", home=signed_home).count('"name": "bench-signed-')
            signed = '"signed": true' in env.pkgmgr("registry", "list", "-o", "json", home=signed_home)
            return found == count and signed, f"{found} of {count} extensions installed from the signed registry"

        yield Case(subject=lambda: run(command(signed_home), cwd=env.workdir, env=clean_env(env.workdir)),
                   baseline=lambda: run(command(plain_home), cwd=env.workdir, env=clean_env(env.workdir)),
                   reset=lambda: _reset(env, signed_home, names, server, signed=True),
                   reset_baseline=lambda: _reset(env, plain_home, names, server, signed=False),
                   baseline_label="the same ext install from the same registry, added without --root",
                   facts={"extensions": f"{count} x {FILES} files",
                          "verification": "ngclient: root, timestamp, snapshot, targets; every file a TUF target"},
                   verdict=verdict)
