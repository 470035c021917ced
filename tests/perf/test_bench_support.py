"""The benchmark harness's own pieces: the loopback registry server in its own process (its
request log is what the request-count verdicts rely on), `min_repeat`, and the CPU ratio."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from urllib.error import HTTPError

import pytest

from bench.harness import run_benchmark
from bench.registry import Benchmark, Case, Env, Target
from bench.support import Release, StaticServer, clean_env, write_archive, write_registry


def fetch(url: str, etag: str | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"If-None-Match": etag} if etag else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except HTTPError as error:
        return error.code, dict(error.headers), b""


def test_static_server_logs_every_request_with_its_status(tmp_path: Path) -> None:
    sha, size = write_archive(tmp_path / "archives" / "a-1.0.0.tar.gz", "a", "1.0.0", {"extension.toml": b"x"})
    write_registry(tmp_path, [Release("a-ext", "1.0.0", "archives/a-1.0.0.tar.gz", sha, size)])
    with StaticServer(tmp_path) as server:
        status, headers, body = fetch(server.url + "registry.toml")
        assert status == 200 and body.startswith(b"[registry]")
        assert fetch(server.url + "registry.toml", headers["ETag"])[0] == 304
        assert fetch(server.url + "nothing")[0] == 404
        assert fetch(server.url + "../outside")[0] == 404
        hits = server.take_hits()
        assert [(h.path, h.status, h.conditional) for h in hits[:3]] == [
            ("/registry.toml", 200, False), ("/registry.toml", 304, True), ("/nothing", 404, False)]
        assert hits[0].sent == len(body) and hits[1].sent == 0
        assert server.take_hits() == [] and server.errors == []
        process = server._proc
    assert process is not None and process.poll() is not None  # stopped with the block


def test_clean_env_caches_bytecode_and_drops_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("PKGMGR_HOME", "/elsewhere")
    env = clean_env(tmp_path)
    assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pycache")
    assert not {"GITHUB_TOKEN", "PYTHONDONTWRITEBYTECODE", "PKGMGR_HOME"} & set(env)


def test_min_repeat_and_the_cpu_ratio() -> None:
    def setup(env: Env):
        yield Case(subject=lambda: sum(range(20000)), baseline=lambda: sum(range(10000)), min_repeat=7)

    result = run_benchmark(Benchmark("tiny", "tiny", Target("<= 100x", max_ratio=100.0), setup), repeat=2,
                           smoke=False)
    assert result.error is None and result.runs == 7 and len(result.cpu_ratios) <= 7
    assert result.to_json()["cpu_ratio"] == result.cpu_ratio


def test_fresh_dirs_are_new_for_every_run_and_deleted_at_the_end(tmp_path: Path) -> None:
    from bench.support import FreshDirs

    template = tmp_path / "template"
    template.mkdir()
    (template / "config.toml").write_text("x = 1\n", encoding="utf-8")
    dirs = FreshDirs(tmp_path, "home")
    first, second = dirs.next(template), dirs.next(template)
    assert first != second and (second / "config.toml").is_file() and dirs.last == second
    dirs.cleanup()
    assert not first.exists() and not second.exists()


def test_report_keeps_the_before_column(tmp_path: Path) -> None:
    from bench.harness import Result
    from bench.report import END, START, write_report

    doc = tmp_path / "performance.md"
    doc.write_text(f"# Perf\n\n{START}\n\n| benchmark | target | peer / baseline | pkgmgr | ratio (cpu) | load | met "
                   f"| before |\n|---|---|---|---|---|---|---|---|\n| `tiny` | x | y | 1 s | 1× | 1 | yes | 9 s, 3× |\n"
                   f"| `other` | a | b | c | d | e | f | g |\n\n{END}\n\nafter\n", encoding="utf-8")
    result = Result("tiny", "tiny", "<= 2x", smoke=False, subject=[0.5], subject_cpu=[0.4], baseline=[0.25],
                    baseline_cpu=[0.2], baseline_label="peer", ratios=[2.0], cpu_ratios=[2.0], met=True,
                    load=(1.0, 2.0))
    write_report(doc, [result], {"cpu": "c", "cores": 2, "implementation": "CPython", "python": "3.11"})
    text = doc.read_text(encoding="utf-8")
    assert "| `tiny` | <= 2x | 250 ms: peer | 500 ms | 2.00× (2.00×) | 1.0–2.0 | yes | 9 s, 3× |" in text
    assert "| `other` | a | b | c | d | e | f | g |" in text  # not run: kept
    assert text.startswith("# Perf") and text.rstrip().endswith("after")
