"""Name rules shared by bundles, profiles, agents, channels, jobs, triggers and layouts.

Names identify resources case-insensitively (SPEC 9.1 lower-cases them and strips them before
hashing), so a name must be non-empty, carry no surrounding whitespace (` x` and `x` would be
the same identity) and no control characters. Agent names are compared by `agent_key`, which
also sees through look-alike spellings (invisible characters, fullwidth forms, other scripts'
look-alike letters, combining marks).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import Callable, Collection

# Letters of other scripts that render like a Latin letter (after Unicode TR39's confusables,
# restricted to Cyrillic, Greek and Latin extensions: the look-alikes of an ASCII name). Both
# cases are mapped, before case folding: Cyrillic `Н` looks like `H`, its lower case `н` does not.
_LOOKALIKES = str.maketrans({
    # Cyrillic
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԛ": "Q", "Ԝ": "W", "Ү": "Y", "Ӏ": "l", "Һ": "H",
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j",
    "һ": "h", "ԁ": "d", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ү": "y", "ᴄ": "c", "ᴋ": "k", "ᴍ": "m", "ᴛ": "t",
    # Greek
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C", "Ϳ": "J",
    "α": "a", "γ": "y", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "υ": "u", "χ": "x", "ϲ": "c",
    "ϳ": "j", "η": "n",
    # Latin letters that are not ASCII but look it, and dashes that look like a hyphen-minus
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɡ": "g", "ɩ": "i", "ʟ": "l", "ɪ": "i", "ʏ": "y",
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2043": "-", "\u2212": "-",
})
# Default_Ignorable_Code_Point beyond the format characters (Cf): invisible when rendered
_IGNORABLE_RANGES = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
                     (0xE0000, 0xE0FFF))


# Scripts that East Asian writing mixes, with each other and with Latin (TR39's "Highly
# Restrictive" level): counted as one, "CJK"
_CJK = {"HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "HALFWIDTH", "CJK", "HANGUL", "BOPOMOFO", "IDEOGRAPHIC"}


def letter_scripts(name: str) -> set[str]:
    """The scripts of the letters of `name` (after NFKC, so fullwidth Latin is Latin), as the
    first word of each letter's Unicode name; Han, Hangul, kana and Bopomofo count as one, "CJK"."""
    scripts = set()
    for char in unicodedata.normalize("NFKC", name):
        if not unicodedata.category(char).startswith("L"):
            continue
        words = unicodedata.name(char, "UNKNOWN").split()
        script = words[0] if words[0] not in {"MODIFIER", "SMALL", "CAPITAL"} or len(words) < 3 else words[2]
        scripts.add("CJK" if script in _CJK else script)
    return scripts


def mixed_script_problem(value: str) -> str | None:
    """Why an agent name that mixes scripts is refused (pkgmgr's rule, SPEC 8: a Latin name with
    one Armenian or Cyrillic letter is a look-alike no mapping can list in full), or None."""
    scripts = letter_scripts(value)
    if scripts <= {"CJK", "LATIN"}:  # East Asian names mix with Latin (TR39 "Highly Restrictive")
        return None
    if len(scripts) > 1:
        return (f"agent name {value!r} mixes scripts ({', '.join(sorted(s.title() for s in scripts))}): "
                "pkgmgr's rule against look-alike agent names")
    return None


def name_problem(value: str, what: str) -> str | None:
    """Why `value` cannot name a `what`, or None."""
    if not value.strip():
        return f"{what} must not be empty"
    if value != value.strip():
        return f"{what} {value!r} has leading or trailing whitespace"
    if any(unicodedata.category(char) == "Cc" for char in value):
        return f"{what} {value!r} contains a control character (pkgmgr's rule)"
    return None


def agent_name_problem(value: str, reserved: Collection[str]) -> str | None:
    """SPEC 8 agent names: a valid name, no `/` or `\\`, not `.`/`..`, not reserved.

    `reserved` holds lower-cased names.
    """
    problem = name_problem(value, "agent name")
    if problem:
        return problem
    if "/" in value or "\\" in value:
        return f"agent name {value!r} must not contain '/' or '\\'"
    if value in (".", ".."):
        return f"agent name {value!r} is not allowed"
    key = agent_key(value)
    if any(agent_key(name) == key for name in reserved):
        return f"agent name {value!r} is reserved by the host (config host.reserved_agent_names)"
    return None


@lru_cache(maxsize=4096)
def agent_key(name: str) -> str:
    """What agent names are compared by (reserved names, conflicts between activations): a
    confusable-safe key, so that `coordinator` spelt with a zero-width space, fullwidth letters,
    a Cyrillic `о` or a combining mark is `coordinator`. NFKC, default-ignorable code points
    removed, combining marks stripped, look-alike letters of other scripts mapped to the Latin
    letter they imitate (a TR39-style skeleton), case folded."""
    text = unicodedata.normalize("NFKC", name.translate(_LOOKALIKES))  # NFKC would turn `ϲ` into `σ`
    text = "".join(char for char in unicodedata.normalize("NFD", text)
                   if not _ignorable(char) and not unicodedata.category(char).startswith("M"))
    return unicodedata.normalize("NFKC", text.translate(_LOOKALIKES).casefold())


def _ignorable(char: str) -> bool:
    if unicodedata.category(char) == "Cf":
        return True
    point = ord(char)
    return any(low <= point <= high for low, high in _IGNORABLE_RANGES)


class UniqueNames:
    """First-seen registry: `claim` returns where a name was first seen. Case-insensitive by
    default (bundles, profiles, agents, layout ids: Compozy's `bundleLookupKey`); jobs, triggers
    and channels are unique case-sensitively in Compozy (`validateJobs`, `validateTriggers`,
    `validateChannels`), hence `case_sensitive`. `key` says when two names are the same
    (agents: `agent_key`, confusable-safe)."""

    def __init__(self, key: Callable[[str], str] | None = None, *, case_sensitive: bool = False) -> None:
        self._seen: dict[str, str] = {}
        self._key: Callable[[str], str] = key or ((lambda name: name) if case_sensitive else str.lower)

    def claim(self, name: str, where: str) -> str | None:
        folded = self._key(name)
        first = self._seen.get(folded)
        if first is None:
            self._seen[folded] = where
        return first
