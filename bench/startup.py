"""`startup-version` and `startup-list`: how fast the command line starts (SPEC 12: neither
imports requests, rich or jsonschema; issue 8: `pkgmgr --version` <= 2x and `ext list -o json`
with 100 installed <= 4x `python3 -c pass`).

Both sides are fresh processes of the same interpreter with the same environment (bytecode
cached, see `bench.support.clean_env`); many alternating runs, because a run takes tens of
milliseconds and the machine's noise is of the same order.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

from bench.registry import BenchError, Case, Env, Target, benchmark
from bench.support import clean_env, manifest_toml, pkgmgr_command, run

INSTALLED = 100
HEAVY = ("requests", "rich", "jsonschema", "tomlkit")
RUNS = 21


def _spawn(command: list[str], env: dict[str, str], cwd: Path) -> None:
    proc = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        raise BenchError(f"{' '.join(command)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")


def heavy_imports(args: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """The heavy modules a fresh `pkgmgr ARGS` process has loaded when it is done."""
    wrapper = ("import sys, io, contextlib\nfrom pkgmgr.cli import main\n"
               "with contextlib.redirect_stdout(io.StringIO()): main(sys.argv[1:])\n"
               "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))")
    loaded = run([sys.executable, "-c", wrapper, *args], env=env, cwd=cwd).split()
    return [name for name in HEAVY if name in loaded]


def _start_up_case(env: Env, args: list[str], label: str) -> Case:
    variables = clean_env(env.workdir)
    command = [*pkgmgr_command(), *args]
    python = [sys.executable, "-c", "pass"]

    def verdict() -> tuple[bool, str]:
        heavy = heavy_imports(args[:], variables, env.workdir)
        return not heavy, (f"imports none of {', '.join(HEAVY)}" if not heavy else f"imports {', '.join(heavy)}")

    return Case(subject=lambda: _spawn(command, variables, env.workdir),
                baseline=lambda: _spawn(python, variables, env.workdir),
                baseline_label=f"{sys.executable} -c pass (same interpreter and environment)",
                facts={"command": label}, verdict=verdict, min_repeat=RUNS)


@benchmark("startup-version", target=Target("<= 1.5x python3 -c pass", max_ratio=1.5),
           summary="pkgmgr --version in a fresh process")
def startup_version(env: Env) -> Iterator[Case]:
    yield _start_up_case(env, ["--version"], "pkgmgr --version")


@benchmark("startup-list", target=Target("<= 3x python3 -c pass", max_ratio=3.0),
           summary=f"pkgmgr ext list -o json with {INSTALLED} extensions installed, in a fresh process")
def startup_list(env: Env) -> Iterator[Case]:
    count = 5 if env.smoke else INSTALLED
    home = env.workdir / "home"
    sources = []
    for i in range(count):
        root = env.workdir / "src" / f"bench-list-{i:03d}"
        root.mkdir(parents=True)
        (root / "extension.toml").write_bytes(manifest_toml(f"bench-list-{i:03d}", "1.0.0"))
        (root / "README.md").write_text(f"extension {i}\n", encoding="utf-8")
        sources.append(root)
    env.pkgmgr("ext", "install", *sources, "--allow-unverified", "--yes", "-o", "json", home=home)
    args = ["--home", str(home), "ext", "list", "-o", "json"]
    listed = json.loads(env.pkgmgr(*args[2:], home=home))["extensions"]
    if len(listed) != count:
        raise BenchError(f"expected {count} installed extensions, ext list shows {len(listed)}")
    case = _start_up_case(env, args, f"pkgmgr ext list -o json ({count} installed)")
    case.facts["installed"] = count
    yield case
