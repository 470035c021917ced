"""`install-many`, `install-uv`, `install-big`, `install-small-files`: installing archives
against the peers (SPEC 12): 20 small extensions in one command <= 1.5x `uv pip install
--no-deps --target` of 20 wheels with the same files from a loopback PEP 503 index with hashes,
and <= 1.0x a loop of `curl -o`, `sha256sum -c` and `tar -xzf`; one 200 MiB archive <= 1.1x
`openssl dgst -sha256` + `tar -xzf`, the archive read from disk once; 10,000 small files in one
archive <= 1.5x `tar -xzf`.

pkgmgr runs as a subprocess (`pkgmgr --home ... ext install ...`), like the peers, which also
pay their processes' start-up. Every timed run, pkgmgr's and the peer's, writes into a fresh
directory (a copy of a template home with its config and an initialised store for pkgmgr, made
untimed; empty caches); the directories are deleted only after the last round (`FreshDirs`).
"""

from __future__ import annotations

import random
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.registry import BenchError, Case, Env, Target, benchmark
from bench.support import (
    FreshDirs,
    Release,
    StaticServer,
    bench_registry,
    clean_env,
    manifest_toml,
    pkgmgr_command,
    run,
    small_files,
    uv_binary,
    which,
    write_archive,
    write_config,
    write_simple_index,
    write_wheel,
)

MANY, FILES = 20, 60
BIG_MIB = 200
SMALL_FILES = 10_000


def _template_home(env: Env, **config: Any) -> Path:
    """A home with its config and an initialised store (`state.db` migrated, the lock file), as a
    machine that has run pkgmgr before has it — uv's side keeps its interpreter record likewise;
    copied (untimed) before each run. (`ext list` creates nothing: until issue 30 every timed run
    created and migrated the store.)"""
    from pkgmgr.store.scope import global_scope

    home = env.workdir / "home-template"
    write_config(home, **config)
    scope = global_scope(home)
    try:
        with scope.writer():
            pass
    finally:
        scope.close()
    if not (home / "state.db").is_file():
        raise BenchError(f"no store was initialised in {home}")
    env.pkgmgr("ext", "list", "-o", "json", home=home)
    return home


class _Runs:
    """pkgmgr's side of an install benchmark: each run in a fresh copy of the template home."""

    def __init__(self, env: Env, template: Path, args: list[Any], server: StaticServer | None = None,
                 prefix: str = "home", **variables: str) -> None:
        self.env, self.template, self.args, self.server = env, template, args, server
        self.homes = FreshDirs(env.workdir, prefix)
        self.variables = clean_env(env.workdir, **variables)
        self.command: list[Any] = []

    def reset(self) -> None:
        home = self.homes.next(self.template)
        self.command = [*pkgmgr_command(), "--home", home, *self.args]
        if self.server is not None:
            self.server.take_hits()
            if self.server.errors:
                raise BenchError(f"the loopback server failed: {self.server.errors[0]}")

    def install(self) -> None:
        run(self.command, cwd=self.env.workdir, env=self.variables)

    @property
    def home(self) -> Path:
        return self.homes.last


def _many_registry(env: Env, prefix: str) -> tuple[Path, list[str], list[Release], int]:
    count = 3 if env.smoke else MANY
    registry, names, releases = bench_registry(env.workdir, prefix, count, files=FILES)
    return registry, names, releases, count


def _installed(env: Env, home: Path, prefix: str, count: int) -> tuple[bool, str]:
    found = env.pkgmgr("ext", "list", "-o", "json", home=home).count(f'"name": "{prefix}-')
    return found == count, f"{found} of {count} extensions installed by the last run"


@benchmark("install-many", target=Target("<= 1.0x curl+sha256sum+tar loop", max_ratio=1.0),
           summary=f"ext install of {MANY} extensions ({FILES} files each) from a static registry on loopback")
def install_many(env: Env) -> Iterator[Case]:
    registry, names, releases, count = _many_registry(env, "bench-many")
    outs = FreshDirs(env.workdir, "shell")
    with StaticServer(registry) as server:
        ours = _Runs(env, _template_home(env, registries={"bench": server.url}),
                     ["ext", "install", *names, "--yes", "-o", "json"], server)
        curl = which("curl")
        loops: dict[str, str] = {}

        def reset_baseline() -> None:
            out = outs.next()
            loops["script"] = _shell_loop(server.url, releases, out, curl is not None)

        def baseline() -> None:
            run(["bash", "-c", loops["script"]], cwd=outs.last)

        total = sum(r.size for r in releases)
        try:
            yield Case(subject=ours.install, baseline=baseline, reset=ours.reset,
                       reset_baseline=reset_baseline,
                       baseline_label=("bash loop: curl -o, sha256sum -c, tar -xzf per archive" if curl else
                                       "bash loop: python3 urllib download (no curl on this machine), sha256sum -c, "
                                       "tar -xzf per archive"),
                       facts={"extensions": f"{count} x {FILES} files, {total / count / 1024:.1f} KiB per archive",
                              "pkgmgr": "subprocess, fresh home and caches each run, registry on 127.0.0.1"},
                       verdict=lambda: _installed(env, ours.home, "bench-many", count))
        finally:
            ours.homes.cleanup()
            outs.cleanup()


@benchmark("install-uv", target=Target("<= 1.5x uv pip install --no-deps --target", max_ratio=1.5),
           summary=f"install-many's {MANY} extensions against uv installing {MANY} wheels of the same files")
def install_uv(env: Env) -> Iterator[Case]:
    """The peer (SPEC 12): `uv pip install --no-deps --require-hashes --target DIR` of 20 wheels
    holding the same files, from a PEP 503 index on the same kind of loopback server, with a
    fresh target and a fresh uv cache each run holding no package data — pkgmgr's caches are
    empty too. What is warm on each side is what a machine keeps between installs: pkgmgr's
    bytecode and initialised store, uv's record of the interpreter (`interpreter-v*`, copied from
    an untimed run; without it every run pays uv's query of the interpreter, ~0.1 s here)."""
    uv = uv_binary()
    if uv is None:
        raise BenchError("uv is not installed: pip install '.[test]' brings it (the PyPI package ships the binary)")
    registry, names, _, count = _many_registry(env, "bench-uv")
    index = env.workdir / "pypi"
    wheels = []
    requirements = []
    for name in names:
        files = small_files(name, FILES)
        wheel, sha, _ = write_wheel(index / "wheels", name, "1.0.0", files)
        wheels.append((name, wheel, sha))
        requirements.append(f"{name}==1.0.0 --hash=sha256:{sha}")
    write_simple_index(index, wheels)
    reqs = env.workdir / "requirements.txt"
    reqs.write_text("\n".join(requirements) + "\n", encoding="utf-8")
    targets = FreshDirs(env.workdir, "uv-target")
    caches = FreshDirs(env.workdir, "uv-cache")
    uv_env = clean_env(env.workdir, UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    with StaticServer(registry) as server, StaticServer(index) as pypi:
        ours = _Runs(env, _template_home(env, registries={"bench": server.url}),
                     ["ext", "install", *names, "--yes", "-o", "json"], server)
        command: list[Any] = []

        def uv_install(target: Path, cache: Path) -> list[Any]:
            return [uv, "pip", "install", "--no-deps", "--require-hashes", "-r", reqs, "--target", target,
                    "--cache-dir", cache, "--python", sys.executable, "--index-url", pypi.url + "simple/", "--quiet"]

        seed = env.workdir / "uv-seed"
        run(uv_install(seed / "target", seed / "cache"), cwd=env.workdir, env=uv_env)
        interpreter = env.workdir / "uv-cache-template"
        interpreter.mkdir()
        for entry in (seed / "cache").iterdir():
            if entry.name.startswith("interpreter-"):
                shutil.copytree(entry, interpreter / entry.name)

        def reset_baseline() -> None:
            command[:] = uv_install(targets.next(), caches.next(interpreter))

        def baseline() -> None:
            run(command, cwd=env.workdir, env=uv_env)

        def verdict() -> tuple[bool, str]:
            ok, text = _installed(env, ours.home, "bench-uv", count)
            placed = sum(1 for _ in targets.last.rglob("*.md")) if targets.made else 0
            expected = count * (FILES - 1)
            return ok and placed == expected, f"{text}; uv placed {placed} of {expected} files"

        version = run([uv, "--version"]).strip()
        try:
            yield Case(subject=ours.install, baseline=baseline, reset=ours.reset,
                       reset_baseline=reset_baseline,
                       baseline_label=f"{version}: pip install --no-deps --require-hashes --target DIR, "
                                      f"{count} wheels from a loopback PEP 503 index, no package in its cache",
                       facts={"extensions": f"{count} x {FILES} files (the same files in the wheels)",
                              "pkgmgr": "subprocess, fresh home and caches each run, registry on 127.0.0.1"},
                       verdict=verdict)
        finally:
            ours.homes.cleanup()
            targets.cleanup()
            caches.cleanup()


@benchmark("install-durable", target=Target("informative: what SPEC 4's durability costs install-many"),
           summary=f"install-many's {MANY} extensions with the durability steps against the same without them")
def install_durable(env: Env) -> Iterator[Case]:
    """The cost of SPEC 4 "Durability": the same command, its baseline run with
    PKGMGR_TEST_DURABILITY=off (no syncfs before the renames, no directory fsync, synchronous =
    NORMAL: pkgmgr's ordering before issue 16, which loses both versions on a power cut)."""
    registry, names, _, count = _many_registry(env, "bench-durable")
    with StaticServer(registry) as server:
        template = _template_home(env, registries={"bench": server.url})
        args: list[Any] = ["ext", "install", *names, "--yes", "-o", "json"]
        durable = _Runs(env, template, args, server)
        volatile = _Runs(env, template, args, server, "home-volatile", PKGMGR_TEST_DURABILITY="off")
        try:
            yield Case(subject=durable.install, baseline=volatile.install, reset=durable.reset,
                       reset_baseline=volatile.reset,
                       baseline_label="the same command with PKGMGR_TEST_DURABILITY=off",
                       facts={"extensions": f"{count} x {FILES} files",
                              "durable": "one syncfs, a directory fsync per rename, synchronous = FULL"})
        finally:
            durable.homes.cleanup()
            volatile.homes.cleanup()


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


# Reads /proc/self/io when the process ends (all its threads): how many bytes pkgmgr read.
_IO_WRAPPER = ("import atexit, runpy, sys\n"
               "def _io():\n"
               "    with open('/proc/self/io') as f: sys.stderr.write('BENCH-IO ' + f.read().replace(chr(10), ' '))\n"
               "atexit.register(_io)\n"
               "sys.argv = ['pkgmgr', *sys.argv[1:]]\n"
               "runpy.run_module('pkgmgr', run_name='__main__', alter_sys=True)\n")


def _bytes_read(env: Env, command: list[Any], variables: dict[str, str]) -> int | None:
    """`rchar` of pkgmgr running `command` (its arguments after the program), or None where
    /proc/self/io is missing."""
    import subprocess

    proc = subprocess.run([sys.executable, "-c", _IO_WRAPPER, *map(str, command)], cwd=env.workdir,
                          env=variables, capture_output=True, text=True, check=False)
    text = proc.stderr.rsplit("BENCH-IO ", 1)
    if proc.returncode != 0 or len(text) != 2:
        return None
    words = text[1].split()
    values = dict(zip(words[0::2], words[1::2]))
    return int(values["rchar:"]) if "rchar:" in values else None


def _local_install(env: Env, name: str, files: list[tuple[str, bytes]] | dict[str, bytes], *, big: bool,
                   shell: Callable[[Path, Path], str], label: str, facts: dict[str, Any],
                   read_once: bool = False) -> Iterator[Case]:
    """pkgmgr installing one local archive (`ext install PATH --allow-unverified`) against the
    shell command `shell(archive, out)`, both into fresh directories."""
    archive = env.workdir / f"{name}-1.0.0.tar.gz"
    sha, size = write_archive(archive, name, "1.0.0", files)
    unpacked = sum(len(data) for _, data in (files.items() if isinstance(files, dict) else files))
    count = len(files)
    del files
    limits = ({"max_archive_bytes": 1 << 30, "max_uncompressed_bytes": 2 << 30} if big
              else {"max_entries": 4 * SMALL_FILES})
    ours = _Runs(env, _template_home(env, limits=limits),
                 ["ext", "install", archive, "--allow-unverified", "--yes", "-o", "json"])
    outs = FreshDirs(env.workdir, "shell")
    script: dict[str, str] = {}

    def reset_baseline() -> None:
        script["s"] = shell(archive, outs.next())

    def verdict() -> tuple[bool, str]:
        status = env.pkgmgr("ext", "status", name, "-o", "json", home=ours.home)
        ok = f'"sha256": "{sha}"' in status
        text = "the archive is installed with its sha256 recorded" if ok else "the install is not recorded"
        if read_once and ok:
            ours.reset()
            read = _bytes_read(env, ours.command[len(pkgmgr_command()):], ours.variables)
            if read is not None:
                once = read < 1.5 * size
                ok = ok and once
                text += (f"; pkgmgr read {read / (1 << 20):.1f} MiB for a {size / (1 << 20):.1f} MiB archive "
                         f"({read / size:.2f}x: {'read once' if once else 'NOT read once'})")
        return ok, text

    facts = {"archive": f"{size / (1 << 20):.1f} MiB compressed, {unpacked / (1 << 20):.1f} MiB in {count} files",
             **facts}
    try:
        yield Case(subject=ours.install, baseline=lambda: run(["bash", "-c", script["s"]]), reset=ours.reset,
                   reset_baseline=reset_baseline, baseline_label=label, facts=facts, verdict=verdict)
    finally:
        ours.homes.cleanup()
        outs.cleanup()


@benchmark("install-big", target=Target("<= 1.1x openssl dgst -sha256 + tar -xzf, read once", max_ratio=1.1),
           summary=f"ext install of one {BIG_MIB} MiB archive (mixed random and text files) from a local path")
def install_big(env: Env) -> Iterator[Case]:
    mib = 8 if env.smoke else BIG_MIB
    q = shlex.quote
    yield from _local_install(
        env, "bench-big", list(big_archive_files(mib)), big=True, read_once=True,
        shell=lambda a, out: f"openssl dgst -sha256 {q(str(a))} >/dev/null && tar -xzf {q(str(a))} -C {q(str(out))}",
        label="openssl dgst -sha256 ARCHIVE && tar -xzf ARCHIVE -C DIR (one bash)",
        facts={"pkgmgr": "subprocess, ext install PATH --allow-unverified --yes (hash, extract, validate, "
                         "tree checksum, commit)"})


def many_small_files(count: int) -> dict[str, bytes]:
    """`count` files of 100-1,500 bytes in 100 folders, the manifest included."""
    rng = random.Random(7)
    files = {"extension.toml": manifest_toml("bench-small", "1.0.0")}
    for i in range(count - 1):
        line = f"file {i}: a short line of an ordinary small file.\n".encode()
        files[f"d{i % 100:02d}/f-{i:05d}.txt"] = line * rng.randint(2, 30)
    return files


@benchmark("install-small-files", target=Target("<= 1.5x tar -xzf", max_ratio=1.5),
           summary=f"ext install of one archive of {SMALL_FILES:,} small files from a local path")
def install_small_files(env: Env) -> Iterator[Case]:
    q = shlex.quote
    yield from _local_install(
        env, "bench-small", many_small_files(500 if env.smoke else SMALL_FILES), big=False,
        shell=lambda a, out: f"tar -xzf {q(str(a))} -C {q(str(out))}",
        label="tar -xzf ARCHIVE -C DIR",
        facts={"pkgmgr": "subprocess, ext install PATH --allow-unverified --yes"})
