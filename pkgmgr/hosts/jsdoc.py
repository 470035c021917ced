"""The JSON documents of the hosts written in JavaScript (Gemini CLI, Claude Code): read through
the bounded reader and pkgmgr's strict decoder (`pkgmgr.documents`), and the bits of
JavaScript's semantics their rules depend on (truthiness, `String.prototype.trim`), so each host
module states only its own rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pkgmgr.errors import Code, Problem, ProblemSink, ValidationFailed

UTF8_BOM = b"\xef\xbb\xbf"
# JavaScript's WhiteSpace and LineTerminator (what trim() and /\s/ take): U+FEFF is one, U+0085 and
# U+001C-U+001F are not (Python's str.strip() says the opposite on both)
JS_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
           "\u2028\u2029\u202f\u205f\u3000\ufeff"


def kind(value: Any) -> str:
    """A JSON value's kind as a message names it ("a string", "an array", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value: "", 0, false and null are false; every array and
    object is true."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, str):
        return value != ""
    return True


def js_trim(text: str) -> str:
    return text.strip(JS_SPACE)


def has_js_space(text: str) -> bool:
    return any(c in JS_SPACE for c in text)


def read_file(path: Path, *, file: str, limit: int, what: str) -> bytes:
    """The bytes of the regular file `path` (a link followed, as Node's readFile follows it), at
    most `limit`. Raises `ValidationFailed` (invalid_manifest, naming `file`) when there is none to
    read or it is larger; `what` says what it is for, in the message of a missing file."""
    from pkgmgr.documents import size_text
    from pkgmgr.fsutil import NotRegularFile, read_regular

    try:
        raw = read_regular(path, limit=limit, follow_symlinks=True)
    except FileNotFoundError:
        raise invalid(file, f"is missing: {what}") from None
    except NotRegularFile as exc:
        raise invalid(file, f"is {exc.kind}, not a file") from None
    except OSError as exc:
        raise invalid(file, f"cannot be read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise invalid(file, f"is larger than {size_text(limit)} (pkgmgr's bound)")
    return raw


def invalid(file: str, message: str) -> ValidationFailed:
    return ValidationFailed([Problem(Code.INVALID_MANIFEST, file, "", message)])


def decode(raw: bytes, problems: ProblemSink, *, max_bytes: int, bom: bool) -> Any:
    """A JSON document through pkgmgr's strict bounded decoder (UTF-8, no duplicate keys, finite
    numbers, 64 levels, 200 000 values); a UTF-8 byte order mark first is skipped when `bom` (a
    host that reads it). None, with the problem filed, when it cannot be read."""
    from pkgmgr.documents import DocumentError, Fatal, load_document

    try:
        value, issues = load_document(raw.removeprefix(UTF8_BOM) if bom else raw, kind="json", max_bytes=max_bytes)
    except DocumentError as exc:
        problems.add(exc.key, f"cannot be read: {exc.message}", line=exc.line)
        return None
    for key, message in issues:
        problems.add(key, message)
        if isinstance(message, Fatal):
            return None
    return value


def decode_object(raw: bytes, problems: ProblemSink, *, max_bytes: int, bom: bool, why: str = ""
                  ) -> dict[str, Any] | None:
    """`decode`, and the document must be an object; None (problem filed) otherwise."""
    value = decode(raw, problems, max_bytes=max_bytes, bom=bom)
    if problems:
        return None
    if not isinstance(value, dict):
        problems.add("", f"must be a JSON object, not {kind(value)}{why}")
        return None
    return value


def string_list(document: dict[str, Any], key: str, problems: ProblemSink, *, null_ok: bool, rule: str = ""
                ) -> list[str]:
    """`document[key]` as a list of strings (absent: empty; null too when `null_ok`); a problem
    for anything else. `rule` ends each message (" (pkgmgr's rule)")."""
    if key not in document or (null_ok and document[key] is None):
        return []
    value = document[key]
    if not isinstance(value, list):
        problems.add(key, f"must be a list of strings, not {kind(value)}{rule}")
        return []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            problems.add(f"{key}[{index}]", f"must be a string, not {kind(item)}{rule}")
    return [v for v in value if isinstance(v, str)]
