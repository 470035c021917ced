"""Best-effort line numbers for key paths of a TOML file (`versions[2].sha256` -> 31).

tomllib and tomlkit do not say where a value was written, so the text is scanned: table
headers (`[registry]`, `[[versions]]`) split it into sections, and a key is the first
`key =` line of its section. Inline tables and multi-line values are not followed; when the
key itself cannot be found, the line of its table is the answer, and None when neither is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]#]+?)\s*\]\]?\s*(?:#.*)?$")
_PART = re.compile(r'^(?P<name>"[^"]*"|[^.\[\]]+)(?P<index>(?:\[\d+\])*)$')
_INDEX = re.compile(r"\[(\d+)\]")


@dataclass(frozen=True)
class _Section:
    name: str  # "" for the root section
    occurrence: int  # the n-th header of that name (for arrays of tables)
    start: int  # 1-based line of the header (0 for the root section)
    end: int  # last line, inclusive


def _split(key: str) -> list[tuple[str, int | None]] | None:
    parts: list[tuple[str, int | None]] = []
    for raw in re.findall(r'"[^"]*"|[^.]+', key):
        match = _PART.match(raw)
        if not match:
            return None
        indexes = _INDEX.findall(match["index"])
        parts.append((match["name"].strip('"'), int(indexes[0]) if indexes else None))
    return parts


class TomlLines:
    """Line lookups in one TOML document's text."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        sections: list[_Section] = []
        seen: dict[str, int] = {}
        start, name, occurrence = 0, "", 0
        for number, line in enumerate(self.lines, 1):
            match = _HEADER.match(line)
            if not match:
                continue
            sections.append(_Section(name, occurrence, start, number - 1))
            name = ".".join(p.strip().strip('"') for p in match[2].split("."))
            occurrence = seen.get(name, 0)
            seen[name] = occurrence + 1
            start = number
        sections.append(_Section(name, occurrence, start, len(self.lines)))
        self.sections = sections

    def _section(self, name: str, occurrence: int) -> _Section | None:
        return next((s for s in self.sections if s.name == name and s.occurrence == occurrence), None)

    def _key_in(self, section: _Section, key: str) -> int | None:
        pattern = re.compile(rf'^\s*(?:{re.escape(key)}|"{re.escape(key)}")\s*=')
        for number in range(max(section.start, 1), section.end + 1):
            if number != section.start and pattern.match(self.lines[number - 1]):
                return number
        return None

    def line_of(self, key: str) -> int | None:
        """The line of `key` (a rendered key path), or of its nearest enclosing table."""
        parts = _split(key) if key else None
        if not parts:
            return None
        for depth in range(len(parts), 0, -1):
            table = ".".join(name for name, _ in parts[:depth])
            section = self._section(table, parts[depth - 1][1] or 0)
            if section is None:
                continue
            if depth < len(parts):
                found = self._key_in(section, parts[depth][0])
                if found is not None:
                    return found
            return section.start or None
        root = self._section("", 0)
        return self._key_in(root, parts[0][0]) if root is not None else None
