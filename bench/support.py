"""What the benchmarks share: a static HTTP server on loopback, archive and registry builders,
and running pkgmgr (or a baseline) as a subprocess.

Self-contained on purpose: `python -m bench` needs only the project installed, not the test
extras, so nothing here imports from `tests/`.

- `StaticServer(root)`: a threaded HTTP/1.1 (keep-alive) server for the files under `root`,
  in a process of its own, like a CDN or nginx in front of a registry: an `ETag` (nginx style:
  mtime and size) and `Last-Modified` on every file, 304 for a matching `If-None-Match`,
  bodies sent with `sendfile`. `take_hits()` returns the requests (method, path, status,
  whether it was conditional, body bytes sent) so a benchmark can count and classify them.
- `write_archive`: a reproducible `.tar.gz` of `<name>-<version>/...` (sorted members, as
  `pkgmgr ext pack` writes them).
- `write_wheel`, `write_simple_index`: the same files as a wheel, and a PEP 503 index of
  wheels with `#sha256=` fragments (uv's side of the install benchmarks).
- `FreshDirs`: a new directory for every timed run, all deleted after the last round (SPEC
  12: deleting the previous run's tree just before a timed run costs the side that runs next).
- `write_registry`: a registry index directory (`registry.toml`, sharded entries,
  `index.json`) written directly, fast enough for 10,000 entries; `publish` and
  `bench_registry` fill one with small generated extensions.
- `pkgmgr_command`, `run`, `clean_env`: subprocess runs, checked, with bytecode cached.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Sequence
from urllib.parse import unquote, urlsplit

from bench.registry import BenchError

# --------------------------------------------------------------------------- the server


@dataclass(frozen=True)
class Hit:
    method: str
    path: str
    status: int
    conditional: bool  # the request carried If-None-Match or If-Modified-Since
    sent: int  # body bytes sent


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    disable_nagle_algorithm = True
    server: "_Server"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.server.serve(self)

    do_HEAD = do_GET

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass


class _Server(ThreadingHTTPServer):
    """The server process's side (`serve_forever`): files under `root`, one JSON line per
    request appended to `log` before the response goes out."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, root: Path, log: Any) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.log = log
        self.lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError)):
            self._record({"error": repr(exc)})

    def _record(self, item: dict[str, Any]) -> None:
        with self.lock:
            self.log.write(json.dumps(item) + "\n")
            self.log.flush()

    def serve(self, h: BaseHTTPRequestHandler) -> None:
        rel = unquote(urlsplit(h.path).path).lstrip("/")
        path = (self.root / rel).resolve()
        hit = {"m": h.command, "p": urlsplit(h.path).path,
               "c": "If-None-Match" in h.headers or "If-Modified-Since" in h.headers}
        try:
            if not path.is_relative_to(self.root):
                raise FileNotFoundError(rel)
            if path.is_dir():  # a PEP 503 project page, as nginx's `index index.html`
                path = path / "index.html"
            handle = open(path, "rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            self._record({**hit, "s": 404, "n": 0})
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        with handle:
            st = os.fstat(handle.fileno())
            etag = f'"{st.st_mtime_ns:x}-{st.st_size:x}"'
            headers = {"ETag": etag, "Last-Modified": formatdate(st.st_mtime, usegmt=True)}
            if etag in [tag.strip() for tag in h.headers.get("If-None-Match", "").split(",")]:
                self._record({**hit, "s": 304, "n": 0})
                h.send_response(304)
                for key, value in headers.items():
                    h.send_header(key, value)
                h.end_headers()
                return
            self._record({**hit, "s": 200, "n": 0 if h.command == "HEAD" else st.st_size})
            h.send_response(200)
            for key, value in headers.items():
                h.send_header(key, value)
            h.send_header("Content-Type", "text/html" if path.suffix == ".html" else "application/octet-stream")
            h.send_header("Content-Length", str(st.st_size))
            h.end_headers()
            if h.command != "HEAD" and st.st_size:
                h.wfile.flush()
                h.connection.sendfile(handle)


def serve_forever(root: str, log: str) -> None:
    """The server process: print the port, then serve until terminated."""
    with open(log, "a", encoding="utf-8") as handle:
        server = _Server(Path(root).resolve(), handle)
        print(server.server_address[1], flush=True)
        server.serve_forever(poll_interval=0.5)


class StaticServer:
    """Serves `root` on 127.0.0.1 from a process of its own (module docstring): a registry is
    never in the client's process, and in-process subjects must not share their GIL with it.
    Use as a context manager; `take_hits()` returns the requests recorded since the last call."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self._log = Path(tempfile.mkstemp(prefix="bench-server-", suffix=".log")[1])
        self._offset = 0
        self._proc: subprocess.Popen[str] | None = None
        self._port = 0
        self.errors: list[str] = []

    def start(self) -> "StaticServer":
        here = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from bench.support import serve_forever; serve_forever(*sys.argv[1:])",
             str(self.root), str(self._log)], stdout=subprocess.PIPE, text=True, env=env)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise BenchError(f"the loopback server did not start (said {line!r})")
        self._port = int(line)
        return self

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None
        self._log.unlink(missing_ok=True)

    def __enter__(self) -> "StaticServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/"

    def take_hits(self) -> list[Hit]:
        """The requests recorded since the last call (each is logged before its response)."""
        with open(self._log, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        complete = data[: data.rfind(b"\n") + 1]
        self._offset += len(complete)
        hits = []
        for line in complete.splitlines():
            item = json.loads(line)
            if "error" in item:
                self.errors.append(item["error"])
            else:
                hits.append(Hit(item["m"], item["p"], item["s"], item["c"], item["n"]))
        return hits


# --------------------------------------------------------------------------- archives


def manifest_toml(name: str, version: str) -> bytes:
    return (f'name = "{name}"\nversion = "{version}"\nmin_compozy_version = "0.5.0"\n'
            f'description = "Benchmark extension {name}"\n').encode()


def small_files(name: str, count: int) -> dict[str, bytes]:
    """`count` files of a small extension (1-4 KiB of text each, the manifest included)."""
    files = {"extension.toml": manifest_toml(name, "1.0.0")}
    for index in range(count - 1):
        folder = ("docs", "prompts", "scripts", "templates")[index % 4]
        line = f"{name}: file {index}, some ordinary text of an extension that compresses well.\n"
        files[f"{folder}/file-{index:03d}.md"] = (line * (16 + (index * 37) % 48)).encode()
    return files


def write_archive(path: Path, name: str, version: str, files: dict[str, bytes] | Iterable[tuple[str, bytes]],
                  *, level: int = 6) -> tuple[str, int]:
    """A reproducible `.tar.gz` of `files` under `<name>-<version>/` (members sorted, mtime 0,
    0644); returns (sha256, size)."""
    items = sorted(files.items() if isinstance(files, dict) else files)
    top = f"{name}-{version}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=level) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            dirs: set[str] = set()
            for rel, data in items:
                parts = rel.split("/")[:-1]
                for depth in range(0, len(parts) + 1):
                    folder = "/".join([top, *parts[:depth]])
                    if folder not in dirs:
                        dirs.add(folder)
                        info = tarfile.TarInfo(folder)
                        info.type, info.mode = tarfile.DIRTYPE, 0o755
                        tar.addfile(info)
                info = tarfile.TarInfo(f"{top}/{rel}")
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    return file_digest(path)


def file_digest(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest(), path.stat().st_size


def write_wheel(path_dir: Path, name: str, version: str, files: dict[str, bytes]) -> tuple[Path, str, int]:
    """A pure-Python wheel holding `files` under the package `<name with _>/`, with its
    dist-info (METADATA, WHEEL, RECORD): (path, sha256, size)."""
    import base64

    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    members = {f"{dist}/{rel}": data for rel, data in sorted(files.items())}
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    members[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for rel, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = Path(path_dir) / f"{dist}-{version}-py3-none-any.whl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for rel, data in members.items():
            zf.writestr(zipfile.ZipInfo(rel, (1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    sha, size = file_digest(path)
    return path, sha, size


def write_simple_index(root: Path, wheels: Sequence[tuple[str, Path, str]]) -> None:
    """A PEP 503 index at `root/simple/`: one page per project linking its wheel (served from
    `root/`) with a `#sha256=` fragment. `wheels`: (project name, wheel path under root, sha256)."""
    links = []
    for name, wheel, sha in wheels:
        project = root / "simple" / name
        project.mkdir(parents=True, exist_ok=True)
        rel = wheel.relative_to(root).as_posix()
        (project / "index.html").write_text(
            f'<!DOCTYPE html>\n<html><body>\n<a href="../../{rel}#sha256={sha}">{wheel.name}</a>\n</body></html>\n',
            encoding="utf-8")
        links.append(f'<a href="{name}/">{name}</a>')
    (root / "simple" / "index.html").write_text(
        "<!DOCTYPE html>\n<html><body>\n" + "\n".join(links) + "\n</body></html>\n", encoding="utf-8")


# --------------------------------------------------------------------------- registries


@dataclass(frozen=True)
class Release:
    """One version of an extension in a generated registry."""

    name: str
    version: str
    url: str  # relative to the registry root, or absolute
    sha256: str
    size: int


def write_registry(root: Path, releases: Sequence[Release], *, name: str = "bench", serial: int = 1) -> None:
    """A registry index directory holding `releases` (entries sorted, versions ascending as
    given), with its `index.json`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "registry.toml").write_text(
        f'[registry]\nformat = 1\nname = "{name}"\ndescription = "benchmark registry"\nserial = {serial}\n',
        encoding="utf-8")
    by_name: dict[str, list[Release]] = {}
    for release in releases:
        by_name.setdefault(release.name, []).append(release)
    extensions = []
    for ext, versions in sorted(by_name.items()):
        lines = [f'name = "{ext}"', f'description = "Benchmark extension {ext}"', 'tier = "community"']
        for v in versions:
            lines += ["", "[[versions]]", f'version = "{v.version}"', f'url = "{v.url}"', f'sha256 = "{v.sha256}"',
                      f"size = {v.size}", 'min_compozy_version = "0.5.0"', 'network_digest = ""', "permissions = []",
                      "published = 2026-11-29T00:00:00Z", "yanked = false"]
        entry = root / "extensions" / ext[:2] / f"{ext}.toml"
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_text("\n".join(lines) + "\n", encoding="utf-8")
        extensions.append({"name": ext, "description": f"Benchmark extension {ext}", "tier": "community",
                           "latest": versions[-1].version,
                           "versions": [{"version": v.version, "yanked": False, "min_compozy_version": "0.5.0"}
                                        for v in versions]})
    document = {"format": 1, "serial": serial, "extensions": extensions}
    (root / "index.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def publish(root: Path, names: Sequence[str], *, newer: Iterable[str] = (), files: int = 2) -> list[Release]:
    """A registry at `root` listing `names` at 1.0.0 (and 1.1.0 for those in `newer`), each
    version an archive of `files` files (`small_files`) under `archives/`."""
    newer = set(newer)
    releases = []
    for name in names:
        for version in ("1.0.0", "1.1.0") if name in newer else ("1.0.0",):
            rel = f"archives/{name}-{version}.tar.gz"
            content = small_files(name, files)
            content["extension.toml"] = manifest_toml(name, version)
            sha, size = write_archive(root / rel, name, version, content)
            releases.append(Release(name, version, rel, sha, size))
    write_registry(root, releases)
    return releases


def bench_registry(workdir: Path, prefix: str, count: int, **kwargs: Any) -> tuple[Path, list[str], list[Release]]:
    """`publish` extensions `<prefix>-00` ... into `<workdir>/registry`: (root, names, releases)."""
    names = [f"{prefix}-{i:02d}" for i in range(count)]
    root = workdir / "registry"
    return root, names, publish(root, names, **kwargs)


def write_config(home: Path, *, registries: dict[str, str] | None = None, limits: dict[str, int] | None = None) -> None:
    """`<home>/config.toml` naming `registries` (name -> source) and `[limits]`."""
    home.mkdir(parents=True, exist_ok=True)
    lines = []
    if limits:
        lines.append("[limits]")
        lines += [f"{key} = {value}" for key, value in limits.items()]
    for reg, source in (registries or {}).items():
        lines += [f"[registries.{reg}]", f'source = "{source}"', "priority = 10"]
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- subprocesses


def pkgmgr_command() -> list[str]:
    """How a user starts pkgmgr: the installed console script when it sits beside this
    interpreter (the usual venv), else `python -m pkgmgr`."""
    script = Path(sys.executable).parent / "pkgmgr"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "pkgmgr"]


def run(command: Sequence[Any], *, cwd: Path | None = None, env: dict[str, str] | None = None,
        expect: int = 0) -> str:
    """Run `command`; its stdout. Raises BenchError on another exit status."""
    proc = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != expect:
        raise BenchError(f"{' '.join(map(str, command))} exited {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc.stdout


def clean_env(workdir: Path, **extra: str) -> dict[str, str]:
    """The environment for pkgmgr subprocesses: no token, no proxy, no inherited PKGMGR_*, and
    bytecode cached under `<workdir>/pycache` (PYTHONPYCACHEPREFIX) even where the calling
    environment sets PYTHONDONTWRITEBYTECODE: an installed pkgmgr has its .pyc files (pip
    compiles them), so recompiling every module on every run would measure something no user
    sees. The untimed warm-up run fills the cache."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PKGMGR_") and k not in ("GITHUB_TOKEN", "GH_TOKEN", "PYTHONDONTWRITEBYTECODE")
           and not k.lower().endswith("_proxy")}
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    env.update(extra)
    return env


def which(program: str) -> str | None:
    return shutil.which(program)


def uv_binary() -> str | None:
    """The `uv` of the test extras (the PyPI package ships the binary), else one on PATH."""
    try:
        import uv  # type: ignore[import-not-found]

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


class FreshDirs:
    """`next()`: a new, empty directory under `base` for one timed run (created untimed);
    `cleanup()` deletes them all once the rounds are over. Deleting the previous run's tree
    just before a timed run taxes whichever side runs next (the ext4 journal is still
    committing the deletes), so nothing is deleted between runs."""

    def __init__(self, base: Path, prefix: str) -> None:
        self.base, self.prefix = Path(base), prefix
        self.made: list[Path] = []

    def next(self, template: Path | None = None) -> Path:
        path = self.base / f"{self.prefix}-{len(self.made):03d}"
        if template is not None:
            shutil.copytree(template, path, symlinks=True)
        else:
            path.mkdir(parents=True)
        self.made.append(path)
        return path

    @property
    def last(self) -> Path:
        return self.made[-1]

    def cleanup(self) -> None:
        for path in self.made:
            shutil.rmtree(path, ignore_errors=True)
        self.made.clear()
