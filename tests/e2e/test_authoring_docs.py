"""docs/authoring.md stays true for every host: each `$ pkgmgr` line of the console blocks of its
section on terva, Eva and Vera runs in order, in one folder, and prints the standard output shown
(`...` as in the README: any text within a line, any lines on a line of its own)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.test_readme import _matches

DOC = Path(__file__).resolve().parents[2] / "docs" / "authoring.md"
SECTION = "## Extensions for terva, Eva and Vera"
FENCE = re.compile(r"^```console\n(.*?)^```\n", re.S | re.M)


def steps() -> list[tuple[str, list[str]]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    found: list[tuple[str, list[str]]] = []
    for body in FENCE.findall(section):
        for line in body.splitlines():
            if line.startswith("$ "):
                found.append((line[2:], []))
            else:
                found[-1][1].append(line.rstrip())
    return found


def test_the_section_covers_every_host_from_scaffold_to_publish() -> None:
    commands = [command for command, _ in steps()]
    for host in ("terva", "eva", "vera"):
        assert f"pkgmgr ext new hi-{host} --host {host}" in commands
        assert f"pkgmgr ext validate hi-{host}" in commands
        assert any(c.startswith(f"pkgmgr ext pack hi-{host} ") for c in commands)
        assert f"pkgmgr registry publish dist/hi-{host}-0.1.0.tar.gz extension-index" in commands
    assert "pkgmgr ext link hi-terva" in commands and "pkgmgr ext unlink hi-terva" in commands


def test_the_commands_run_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("TERVA_HOME", str(tmp_path / "terva-home"))
    monkeypatch.setenv("VERA_HOME", str(tmp_path / "vera-home"))
    env = {"NO_COLOR": "1", "COLUMNS": "120"}
    for command, expected in steps():
        argv = shlex.split(command)
        assert argv[0] == "pkgmgr", command
        result = run_cli(argv[1:], env=env, cwd=work)
        assert result.code == 0, (command, result)
        actual = [line.rstrip() for line in result.stdout.splitlines()]
        assert _matches(expected, actual), (
            f"$ {command}\n--- docs/authoring.md shows:\n" + "\n".join(expected) + "\n--- pkgmgr printed:\n"
            + "\n".join(actual) + f"\n--- stderr:\n{result.stderr}")
    assert (work / "hi-terva" / "extension.json").is_file()  # unlink left the working folder
    assert sorted(p.name for p in (work / "dist").iterdir()) == [
        "hi-eva-0.1.0.tar.gz", "hi-terva-0.1.0.tar.gz", "hi-vera-0.1.0.tar.gz"]


@pytest.mark.parametrize("guide", ["README.md", "docs/authoring.md", "docs/bundles.md", "docs/publishing.md",
                                   "docs/workspaces.md", "docs/hosts.md"])
def test_the_user_guides_never_cite_the_spec(guide: str) -> None:
    """Users do not have the SPEC: a guide says what it means (a placeholder such as NAME@SPEC or
    "SPEC" is not a citation; the README's development section may link the developers' documents)."""
    citation = re.compile(r"(?<![@\"])\bSPEC\b(?!\")|\bSPEC\.md\b")
    text = (DOC.parents[1] / guide).read_text(encoding="utf-8")
    cited = [line for line in text.splitlines() if citation.search(line)]
    assert not cited, cited
