"""`install-many` and `install-big`: installing archives against the shell doing it by hand
(SPEC 12: 20 small extensions in one command <= 1.0x a loop of `curl -o`, `sha256sum` and
`tar -xzf`; one 200 MiB archive <= 1.3x `sha256sum` + `tar -xzf`).

pkgmgr runs as a subprocess (`pkgmgr --home ... ext install ...`), like the baseline, which
also pays its processes' start-up. Every pkgmgr run starts from the same state: the
extensions removed and the download and registry caches emptied (untimed), so each run
downloads, verifies, extracts, validates and commits everything again.
"""

from __future__ import annotations

import random
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.registry import BenchError, Case, Env, Target, benchmark
from bench.support import (
    Release,
    StaticServer,
    bench_registry,
    clean_env,
    manifest_toml,
    pkgmgr_command,
    run,
    which,
    write_archive,
    write_config,
)

MANY, FILES = 20, 60
BIG_MIB = 200


def _reset_home(env: Env, home: Path, names: list[str], server: StaticServer | None = None) -> None:
    """Untimed: remove what a run installed and empty the caches it filled (and check the
    server is still well)."""
    env.pkgmgr("ext", "remove", *names, "-o", "json", home=home, expect=(0, 5))
    shutil.rmtree(home / "cache", ignore_errors=True)
    if server is not None:
        server.take_hits()
        if server.errors:
            raise BenchError(f"the loopback server failed: {server.errors[0]}")


@benchmark("install-many", target=Target("<= 1.0x curl+sha256sum+tar loop", max_ratio=1.0),
           summary=f"ext install of {MANY} extensions ({FILES} files each) from a static registry on loopback")
def install_many(env: Env) -> Iterator[Case]:
    count = 3 if env.smoke else MANY
    registry, names, releases = bench_registry(env.workdir, "bench-many", count, files=FILES)
    home = env.workdir / "home"
    out = env.workdir / "shell"
    with StaticServer(registry) as server:
        write_config(home, registries={"bench": server.url})
        command = [*pkgmgr_command(), "--home", home, "ext", "install", *names, "--yes", "-o", "json"]
        curl = which("curl")
        loop = _shell_loop(server.url, releases, out, curl is not None)

        def reset_baseline() -> None:
            shutil.rmtree(out, ignore_errors=True)

        def install() -> None:
            run(command, cwd=env.workdir, env=clean_env(env.workdir))

        def baseline() -> None:
            out.mkdir()
            run(["bash", "-c", loop], cwd=out)

        def verdict() -> tuple[bool, str]:
            installed = env.pkgmgr("ext", "list", "-o", "json", home=home)
            found = installed.count('"name": "bench-many-')
            return found == count, f"{found} of {count} extensions installed by the last run"

        total = sum(r.size for r in releases)
        yield Case(subject=install, baseline=baseline, reset=lambda: _reset_home(env, home, names, server),
                   reset_baseline=reset_baseline,
                   baseline_label=("bash loop: curl -o, sha256sum -c, tar -xzf per archive" if curl else
                                   "bash loop: python3 urllib download (no curl on this machine), sha256sum -c, "
                                   "tar -xzf per archive"),
                   facts={"extensions": f"{count} x {FILES} files, {total / count / 1024:.1f} KiB per archive",
                          "pkgmgr": "subprocess, cold caches (downloads, registry files), registry on 127.0.0.1"},
                   verdict=verdict)


@benchmark("install-durable", target=Target("informative: what SPEC 4's durability costs install-many"),
           summary=f"install-many's {MANY} extensions with the durability steps against the same without them")
def install_durable(env: Env) -> Iterator[Case]:
    """The cost of SPEC 4 "Durability": the same command, its baseline run with
    PKGMGR_TEST_DURABILITY=off (no syncfs before the renames, no directory fsync, synchronous =
    NORMAL: pkgmgr's ordering before issue 16, which loses both versions on a power cut)."""
    count = 3 if env.smoke else MANY
    registry, names, _ = bench_registry(env.workdir, "bench-durable", count, files=FILES)
    home = env.workdir / "home"
    with StaticServer(registry) as server:
        write_config(home, registries={"bench": server.url})
        command = [*pkgmgr_command(), "--home", home, "ext", "install", *names, "--yes", "-o", "json"]
        durable, volatile = clean_env(env.workdir), clean_env(env.workdir, PKGMGR_TEST_DURABILITY="off")

        def reset() -> None:
            _reset_home(env, home, names, server)

        yield Case(subject=lambda: run(command, cwd=env.workdir, env=durable),
                   baseline=lambda: run(command, cwd=env.workdir, env=volatile), reset=reset, reset_baseline=reset,
                   baseline_label="the same command with PKGMGR_TEST_DURABILITY=off",
                   facts={"extensions": f"{count} x {FILES} files",
                          "durable": "one syncfs, a directory fsync per rename, synchronous = FULL"})


def _shell_loop(base: str, releases: list[Release], out: Path, curl: bool) -> str:
    lines = ["set -e"]
    for r in releases:
        url = base + r.url
        archive = f"{r.name}.tar.gz"
        fetch = (f"curl -fsS -o {archive} {shlex.quote(url)}" if curl else
                 f"python3 -c 'import sys,urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "
                 f"{shlex.quote(url)} {archive}")
        lines += [fetch, f"echo '{r.sha256}  {archive}' | sha256sum -c --quiet -",
                  f"mkdir {r.name}", f"tar -xzf {archive} -C {r.name}"]
    return "\n".join(lines) + "\n"


def big_archive_files(total_mib: int, seed: int = 12) -> Iterator[tuple[str, bytes]]:
    """Files whose .tar.gz is about `total_mib` MiB: ~3/4 of the compressed bytes are random
    (incompressible) files of 256 KiB, the rest text files of 320 KiB (~3:1 under gzip)."""
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
             for _ in range(4000)]
    pool = bytearray()
    while len(pool) < (2 << 20):
        pool += b" ".join(rng.choice(words) for _ in range(rng.randint(4, 14))) + b".\n"
    random_files = max(1, int(total_mib * 0.75 * 4))  # 256 KiB each
    text_files = max(1, int(total_mib * 0.25 * 3 / 320 * 1024))  # 320 KiB each, ~3:1
    yield "extension.toml", manifest_toml("bench-big", "1.0.0")
    for i in range(random_files):
        yield f"data/blob-{i:04d}.bin", rng.randbytes(256 * 1024)
    for i in range(text_files):
        start = rng.randrange(0, len(pool) - 320 * 1024)
        yield f"text/doc-{i:04d}.txt", bytes(pool[start:start + 320 * 1024])


@benchmark("install-big", target=Target("<= 1.3x sha256sum + tar -xzf", max_ratio=1.3),
           summary=f"ext install of one {BIG_MIB} MiB archive (mixed random and text files) from a local path")
def install_big(env: Env) -> Iterator[Case]:
    mib = 8 if env.smoke else BIG_MIB
    archive = env.workdir / "bench-big-1.0.0.tar.gz"
    files = list(big_archive_files(mib))
    sha, size = write_archive(archive, "bench-big", "1.0.0", files)
    unpacked = sum(len(data) for _, data in files)
    count = len(files)
    del files
    home = env.workdir / "home"
    write_config(home, limits={"max_archive_bytes": 1 << 30, "max_uncompressed_bytes": 2 << 30})
    out = env.workdir / "shell"
    command = [*pkgmgr_command(), "--home", home, "ext", "install", archive, "--allow-unverified", "--yes",
               "-o", "json"]
    script = f"sha256sum {shlex.quote(str(archive))} >/dev/null && tar -xzf {shlex.quote(str(archive))} -C {out}"

    def install() -> None:
        run(command, cwd=env.workdir, env=clean_env(env.workdir))

    def baseline() -> None:
        out.mkdir()
        run(["bash", "-c", script])

    def verdict() -> tuple[bool, str]:
        status = env.pkgmgr("ext", "status", "bench-big", "-o", "json", home=home)
        ok = f'"sha256": "{sha}"' in status
        return ok, "the archive is installed with its sha256 recorded" if ok else "the install is not recorded"

    facts: dict[str, Any] = {"archive": f"{size / (1 << 20):.1f} MiB compressed, {unpacked / (1 << 20):.1f} MiB in "
                                        f"{count} files",
                             "pkgmgr": "subprocess, ext install PATH --allow-unverified --yes (hash, extract, "
                                       "validate, tree checksum, commit)"}
    yield Case(subject=install, baseline=baseline, reset=lambda: _reset_home(env, home, ["bench-big"]),
               reset_baseline=lambda: shutil.rmtree(out, ignore_errors=True),
               baseline_label="sha256sum ARCHIVE && tar -xzf ARCHIVE -C DIR (one bash)", facts=facts,
               verdict=verdict)
