"""Issue 29's per-host remainder, run as the user runs it: completion offers every host's
installed names (and completes them for rollback/unlink), `ext info` shows no minimum host
version for a host whose manifests carry none, and a project install that creates `.terva/` or
`.eva/` in a git work tree suggests keeping it out of git, once."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.hosts.helpers import UNVERIFIED, eva_script, human, ok, terva_extension, vera_extension
from tests.support.builders import write_extension


def test_completion_offers_every_hosts_installed_names(tmp_path: Path) -> None:
    ok("ext", "install", write_extension(tmp_path / "src" / "demo-ext"), *UNVERIFIED)
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    ok("ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED)
    ok("ext", "install", vera_extension(tmp_path / "src" / "word", "acme.word"), *UNVERIFIED)
    assert human("completion", "names").stdout.split() == ["acme.word", "demo-ext", "hello", "notes"]


def test_completion_names_rollback_and_unlink_in_bash(tmp_path: Path) -> None:
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    script = tmp_path / "pkgmgr.bash"
    script.write_text(human("completion", "bash").stdout, encoding="utf-8")
    shim = tmp_path / "bin" / "pkgmgr"
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\nprintf 'hello\\n'\n", encoding="utf-8")  # what `completion names` printed above
    shim.chmod(0o755)
    for command in ("rollback", "unlink", "status"):
        probe = (f"PATH={shim.parent}:$PATH; source {script}; COMP_WORDS=(pkgmgr ext {command} he); COMP_CWORD=3; "
                 "_pkgmgr; printf '%s\\n' \"${COMPREPLY[@]}\"")
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=False)
        assert done.stdout.split() == ["hello"], (command, done)


def test_ext_info_shows_no_min_host_for_a_host_without_one() -> None:
    vera = human("ext", "info", "word-count").stdout
    assert "MIN HOST" not in vera and "0.0.0" not in vera
    assert "MIN HOST" in human("ext", "info", "review-pack").stdout


def test_a_project_install_that_creates_the_host_folder_in_git_suggests_ignoring_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "pkgmgr.toml").write_text("", encoding="utf-8")
    ok("trust", "--workspace", project)
    hello = terva_extension(tmp_path / "src" / "hello")
    first = human("--scope", "workspace", "ext", "install", hello, *UNVERIFIED, cwd=project)
    note = f"created .terva/ in {project} for installed extensions: add '.terva/' to .gitignore to keep them out of git"
    assert note in first.stdout
    other = terva_extension(tmp_path / "src" / "other", "other")
    assert ".gitignore" not in human("--scope", "workspace", "ext", "install", other, *UNVERIFIED, cwd=project).stdout
    eva = human("--scope", "workspace", "ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED,
                cwd=project).stdout
    assert "add '.eva/' to .gitignore" in eva
    elsewhere = tmp_path / "no-git"
    elsewhere.mkdir()
    (elsewhere / "pkgmgr.toml").write_text("", encoding="utf-8")
    ok("trust", "--workspace", elsewhere)
    assert ".gitignore" not in human("--scope", "workspace", "ext", "install", hello, *UNVERIFIED,
                                     cwd=elsewhere).stdout


def test_trust_show_has_a_host_column(tmp_path: Path) -> None:
    project = tmp_path / "project"
    terva_extension(project / "tools" / "hello")
    write_extension(project / "tools" / "demo-ext")
    (project / "pkgmgr.toml").write_text('[extensions]\nhello = { path = "tools/hello" }\n'
                                         'demo-ext = { path = "tools/demo-ext" }\n'
                                         'review-pack = "*"\n', encoding="utf-8")
    shown = ok("trust", "--show", "--workspace", project)
    assert {e["name"]: e["host"] for e in shown["extensions"]} == {"hello": "terva", "demo-ext": "compozy",
                                                                   "review-pack": None}
    table = [line.split() for line in human("trust", "--show", "--workspace", project).stdout.splitlines()]
    assert ["EXTENSION", "HOST", "SOURCE"] == next(row for row in table if row[:1] == ["EXTENSION"])[:3]
    assert ["hello", "terva", "path", "tools/hello"] in [row[:4] for row in table]


def test_records_without_markers_are_backfilled_in_one_batch(tmp_path: Path, homes, monkeypatch) -> None:
    """Vera backfills the marker of each record that has none; pkgmgr does too, but as one batch
    (one flush for all), not one fsync per marker: with 20,000 records an install took minutes.
    `bench/` has no host-records case: the before/after timing is in the report of issue 29."""
    import json
    import os

    from pkgmgr import fsutil

    records = [{"id": f"acme.e{i:03d}", "version": "1.0.0", "source": {"kind": "local", "path": f"/src/e{i}"},
                "digest": "sha256:" + "0" * 64, "directory": f"extensions/acme.e{i:03d}", "enabled": i % 2 == 0,
                "installedAt": "2026-01-01T00:00:00.000Z"} for i in range(200)]
    (homes.vera / "extensions").mkdir(parents=True)
    (homes.vera / "extensions.json").write_text(json.dumps({"schema_version": 1, "extensions": records}, indent=2),
                                                encoding="utf-8")
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    monkeypatch.setattr(fsutil, "syncfs", lambda path: (calls.append(path), True)[1])
    ok("ext", "install", vera_extension(tmp_path / "src" / "word", "acme.word"), *UNVERIFIED)
    assert len(calls) < 40, len(calls)  # one flush for the 200 markers, and the install's own
    managed = homes.vera / "extensions" / ".managed"
    assert sorted(p.name for p in managed.iterdir()) == sorted([f"{r['id']}.json" for r in records] + ["acme.word.json"])
    assert json.loads((managed / "acme.e001.json").read_text(encoding="utf-8")) == records[1]
    central = json.loads((homes.vera / "extensions.json").read_text(encoding="utf-8"))["extensions"]
    assert [r["id"] for r in central] == sorted([r["id"] for r in records] + ["acme.word"])
