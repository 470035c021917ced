"""Line numbers of key paths in TOML text."""

from __future__ import annotations

from pkgmgr.registry.toml_lines import TomlLines

TEXT = """\
# an entry
name = "x"
"tier" = "community"

[[versions]]
version = "0.1.0"
url = "a"

[[versions]]  # second
version = "0.2.0"
sha256 = "zz"
permissions = [
  "session.read",
]

[registry]
serial = 3
"""


def test_keys_and_tables() -> None:
    lines = TomlLines(TEXT)
    assert lines.line_of("name") == 2
    assert lines.line_of("tier") == 3
    assert lines.line_of("versions") == 5
    assert lines.line_of("versions[1]") == 9
    assert lines.line_of("versions[0].url") == 7
    assert lines.line_of("versions[1].sha256") == 11
    assert lines.line_of("versions[1].permissions[0]") == 12
    assert lines.line_of("versions[1].published") == 9  # absent: its table
    assert lines.line_of("registry.serial") == 17


def test_unknown_keys() -> None:
    lines = TomlLines(TEXT)
    assert lines.line_of("") is None
    assert lines.line_of("nope") is None
    assert lines.line_of("versions[7].url") is None
    assert TomlLines("").line_of("name") is None
