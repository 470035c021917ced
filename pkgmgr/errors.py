"""The one error hierarchy: every failure a user can see is a `PkgmgrError` with a stable code.

Codes and exit statuses are the contract of SPEC section 11. `Problem` is one finding of a
validator (file, key path, rule); validators collect every problem of a file and raise them
together with `ValidationFailed`.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, field
from enum import StrEnum
from typing import Any

EXIT_CODES: dict[str, int] = {
    "usage": 2,
    **dict.fromkeys(
        (
            "invalid_manifest",
            "invalid_bundle",
            "invalid_layout",
            "invalid_archive",
            "invalid_index",
            "invalid_config",
            "path_escapes_root",
            "agent_reference_not_found",
        ),
        3,
    ),
    **dict.fromkeys(
        (
            "unsafe_archive",
            "archive_too_large",
            "checksum_mismatch",
            "metadata_mismatch",
            "unverified_source",
            "grant_not_allowed",
            "registry_rollback",
            "registry_checksum_changed",
            "registry_expired",
            "registry_signature_invalid",
            "incompatible_host",
            "trust_required",
            "auth_required",
            "tree_modified",
            "state_inconsistent",
        ),
        4,
    ),
    **dict.fromkeys(("not_found", "version_not_found"), 5),
    **dict.fromkeys(
        (
            "already_active",
            "agent_conflict",
            "stale_version",
            "network_digest_mismatch",
            "extension_has_active_bundles",
            "bundle_missing",
            "source_conflict",
            "ambiguous_asset",
            "version_exists",
            "lock_outdated",
            "locked",
        ),
        6,
    ),
    **dict.fromkeys(("network_error", "http_error", "rate_limited"), 7),
    "confirmation_required": 8,
    "io_error": 9,
    "internal": 70,
}


class Code(StrEnum):
    """Every error code of SPEC 11 (a `str`: `Code.NOT_FOUND == "not_found"`, and JSON carries the
    value). `tests/test_errors.py` holds it to SPEC 11's table; `EXIT_CODES` gives each its exit
    status."""

    USAGE = "usage"
    INVALID_MANIFEST = "invalid_manifest"
    INVALID_BUNDLE = "invalid_bundle"
    INVALID_LAYOUT = "invalid_layout"
    INVALID_ARCHIVE = "invalid_archive"
    INVALID_INDEX = "invalid_index"
    INVALID_CONFIG = "invalid_config"
    PATH_ESCAPES_ROOT = "path_escapes_root"
    AGENT_REFERENCE_NOT_FOUND = "agent_reference_not_found"
    UNSAFE_ARCHIVE = "unsafe_archive"
    ARCHIVE_TOO_LARGE = "archive_too_large"
    CHECKSUM_MISMATCH = "checksum_mismatch"
    METADATA_MISMATCH = "metadata_mismatch"
    UNVERIFIED_SOURCE = "unverified_source"
    GRANT_NOT_ALLOWED = "grant_not_allowed"
    REGISTRY_ROLLBACK = "registry_rollback"
    REGISTRY_CHECKSUM_CHANGED = "registry_checksum_changed"
    REGISTRY_EXPIRED = "registry_expired"
    REGISTRY_SIGNATURE_INVALID = "registry_signature_invalid"
    INCOMPATIBLE_HOST = "incompatible_host"
    TRUST_REQUIRED = "trust_required"
    AUTH_REQUIRED = "auth_required"
    TREE_MODIFIED = "tree_modified"
    STATE_INCONSISTENT = "state_inconsistent"
    NOT_FOUND = "not_found"
    VERSION_NOT_FOUND = "version_not_found"
    ALREADY_ACTIVE = "already_active"
    AGENT_CONFLICT = "agent_conflict"
    STALE_VERSION = "stale_version"
    NETWORK_DIGEST_MISMATCH = "network_digest_mismatch"
    EXTENSION_HAS_ACTIVE_BUNDLES = "extension_has_active_bundles"
    BUNDLE_MISSING = "bundle_missing"
    SOURCE_CONFLICT = "source_conflict"
    AMBIGUOUS_ASSET = "ambiguous_asset"
    VERSION_EXISTS = "version_exists"
    LOCK_OUTDATED = "lock_outdated"
    LOCKED = "locked"
    NETWORK_ERROR = "network_error"
    HTTP_ERROR = "http_error"
    RATE_LIMITED = "rate_limited"
    CONFIRMATION_REQUIRED = "confirmation_required"
    IO_ERROR = "io_error"
    INTERNAL = "internal"

    @property
    def exit_status(self) -> int:
        return EXIT_CODES[self.value]


def exit_code_for(code: str) -> int:
    """Exit status of an error code; an unknown code is a bug and maps to 70."""
    return EXIT_CODES.get(code, 70)


@dataclass(frozen=True)
class Problem:
    """One finding, the one type of every checker: a validator's (which file, which key path,
    which rule was broken), a scope rule's at activation (`kind` and `name` say what it is
    about: `Problem.scope_rule`), and an invariant `doctor` checks or a repair it made (`scope`
    and `check`: `Problem.invariant`).

    `to_json` keeps each its SPEC shape: `{"code","file","key","message"[,"line"]}` for
    validation, `{"code","kind","name","message","file","key"}` for a scope rule and
    `{"scope","check","message","repairable"}` for doctor."""

    code: str
    file: str
    key: str
    message: str
    line: int | None = None
    _: KW_ONLY
    kind: str = ""  # a scope rule's subject: agent | job | trigger | window_layout
    name: str = ""  # the subject's name (an agent, a job; the extension of a doctor finding)
    scope: str = ""  # doctor: the scope whose invariant this is
    check: str = ""  # doctor: which invariant (layout, sqlite, row, install, leftover, activation, ...)
    repairable: bool = False  # doctor: a repair made (or one it can make)

    @classmethod
    def scope_rule(cls, code: str, kind: str, name: str, message: str, file: str = "", key: str = "") -> Problem:
        """A scope rule broken at activate, confirm or update (SPEC 8, 9.3)."""
        return cls(code, file, key, message, kind=kind, name=name)

    @classmethod
    def invariant(cls, scope: str, check: str, message: str, repairable: bool = False, *, name: str = "") -> Problem:
        """A violated invariant of a scope (`state_inconsistent`), or a repair done."""
        return cls(Code.STATE_INCONSISTENT, "", "", message, scope=scope, check=check, repairable=repairable,
                   name=name)

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        if self.check:
            return {"scope": self.scope, "check": self.check, "message": self.message, "repairable": self.repairable}
        if self.kind:
            return {"code": self.code, "kind": self.kind, "name": self.name, "message": self.message,
                    "file": self.file, "key": self.key}
        data: dict[str, Any] = {"code": self.code, "file": self.file, "key": self.key, "message": self.message}
        if self.line is not None:
            data["line"] = self.line
        return data


class PkgmgrError(Exception):
    """Root of every expected failure. `code` is stable (SPEC 11); `details` is JSON-safe.

    The structured fields `path`, `key`, `expected`, `actual` and `causes` (the errors this one
    stands for) are attributes a caller tests instead of the message; those given also land in
    `details` (`causes` as their JSON). `partial` carries the results a batch command produced
    before (or beside) the failure; the CLI prints them next to the `error` object.
    """

    code: Code = Code.INTERNAL

    def __init__(
        self,
        message: str,
        *,
        code: Code | str | None = None,
        details: dict[str, Any] | None = None,
        hint: str | None = None,
        partial: dict[str, Any] | None = None,
        path: object = None,
        key: str | None = None,
        expected: object = None,
        actual: object = None,
        causes: Iterable[PkgmgrError] = (),
    ) -> None:
        super().__init__(message)
        wanted = code if code is not None else self.code  # a subclass may name its code as a class attribute
        try:
            self.code = Code(wanted)
        except ValueError:
            raise ValueError(f"unknown error code {wanted!r}") from None
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.hint = hint
        self.partial = partial
        self.path, self.key, self.expected, self.actual = path, key, expected, actual
        self.causes: tuple[PkgmgrError, ...] = tuple(causes)
        for name, value in (("path", path), ("key", key), ("expected", expected), ("actual", actual)):
            if value is not None:
                self.details.setdefault(name, value if isinstance(value, (str, int, float, bool)) else str(value))
        if self.causes:
            self.details.setdefault("causes", [cause.to_json() for cause in self.causes])

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.code)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code.value,
            "message": self.message,
            "exit_code": self.exit_code,
            "details": self.details,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code.value!r}, {self.message!r})"


class ValidationFailed(PkgmgrError):
    """Several problems found in one document; the code is the first problem's code."""

    def __init__(self, problems: Iterable[Problem], *, summary: str | None = None) -> None:
        self.problems = tuple(problems)
        if not self.problems:
            raise ValueError("ValidationFailed needs at least one problem")
        first = self.problems[0]
        lines = [str(p) for p in self.problems]
        message = summary + "\n" + "\n".join(lines) if summary else "\n".join(lines)
        super().__init__(
            message,
            code=first.code,
            details={"problems": [p.to_json() for p in self.problems]},
        )


def raise_problems(problems: Iterable[Problem], *, summary: str | None = None) -> None:
    """Raise `ValidationFailed` when `problems` is not empty; return otherwise."""
    problems = list(problems)
    if problems:
        raise ValidationFailed(problems, summary=summary)


@dataclass
class ProblemSink:
    """Collects problems of one file so a validator can report all of them at once."""

    file: str
    code: str
    problems: list[Problem] = field(default_factory=list)

    def add(self, key: str, message: str, *, code: str | None = None, line: int | None = None) -> None:
        self.problems.append(Problem(code or self.code, self.file, key, message, line))

    def extend(self, problems: Iterable[Problem]) -> None:
        self.problems.extend(problems)

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_any(self, *, summary: str | None = None) -> None:
        raise_problems(self.problems, summary=summary)


# --- local storage failures (SPEC 11, exit 9): the one mapping from what the OS (or SQLite) said -----

_IO_HINTS = {
    errno.ENOSPC: "free some space on that filesystem, then run the command again",
    errno.EDQUOT: "free some space within your quota, then run the command again",
    errno.EROFS: "the filesystem is mounted read-only: commands that only read still work",
    errno.EACCES: "check the permissions of that path (and of the directories above it)",
    errno.EPERM: "check the permissions of that path (and of the directories above it)",
    errno.EIO: "the device reported an I/O error: check it (e.g. dmesg) before trusting what it holds",
}
# SQLite's primary result codes that are the disk's doing, and the errno each corresponds to
_SQLITE_IO = {13: errno.ENOSPC, 8: errno.EROFS, 10: errno.EIO, 3: errno.EACCES, 14: errno.EACCES}


def io_error(exc: BaseException, path: object = None) -> PkgmgrError | None:
    """`io_error` for a disk that is full, read-only, refuses access or fails (an `OSError` with
    one of those errnos, or SQLite's FULL, READONLY, IOERR, PERM, CANTOPEN), naming the path and
    the OS's message; None for anything else. Nothing is committed when it is raised: every write
    is one transaction or a temporary file renamed into place."""
    import sqlite3

    if isinstance(exc, OSError):
        number, message = exc.errno, exc.strerror or str(exc)
        where = path if path is not None else exc.filename
        other = exc.filename2 if path is None else None
    elif isinstance(exc, sqlite3.Error):
        number = _SQLITE_IO.get((getattr(exc, "sqlite_errorcode", None) or -1) & 0xFF)
        message, other = str(exc), None
        where = path
        full, read_only = _filesystem_state(path)
        failing = _os_error_opening(path) if number in (errno.EIO, errno.EACCES) else None
        if number in (errno.EIO, errno.EACCES) and full:  # SQLite says "disk I/O error" when -shm cannot grow
            number, message = errno.ENOSPC, f"No space left on device (SQLite: {message})"
        elif number == errno.EACCES and read_only:  # CANTOPEN: say why the file cannot be opened
            number = errno.EROFS
        elif failing is not None:  # SQLite hides the OS's errno: the OS says it again (a failing device: EIO)
            number, message = failing.errno, f"{failing.strerror} (SQLite: {message})"
        elif number == errno.ENOSPC:  # SQLITE_FULL: in the OS's words too
            message = f"No space left on device (SQLite: {message})"
    else:
        return None
    if number not in _IO_HINTS:
        return None
    location = f"{where}" + (f" -> {other}" if other else "") if where is not None else "local storage"
    return PkgmgrError(
        f"{location}: {message}",
        code="io_error",
        details={"path": str(where) if where is not None else None, "errno": errno.errorcode.get(number, number),
                 "os_message": message},
        hint=_IO_HINTS[number] + " (nothing was committed)",
    )


# errnos that say a path cannot name what it was used for — no fault of the disk and no bug: a link
# loop (or a link where O_NOFOLLOW refused one), a file in the middle of a path, a name longer
# than the filesystem takes; each is the code of a path pkgmgr refuses
_PATH_SHAPE = {
    errno.ELOOP: (Code.PATH_ESCAPES_ROOT, "symbolic links loop (or a link stands where pkgmgr follows none)"),
    errno.ENOTDIR: (Code.PATH_ESCAPES_ROOT, "a component of the path is not a directory"),
    errno.ENAMETOOLONG: (Code.INVALID_CONFIG, "the path, or a name in it, is longer than the filesystem takes"),
}


def path_error(exc: BaseException) -> PkgmgrError | None:
    """The error of an `OSError` that says a path cannot be used as one (`_PATH_SHAPE`: ELOOP,
    ENOTDIR, ENAMETOOLONG), naming the path; None for any other. A path planted or configured
    that way (a host's home in a variable, a link loop in a project folder) is invalid input
    (exit 3), never an internal error."""
    if not isinstance(exc, OSError) or exc.errno not in _PATH_SHAPE:
        return None
    code, why = _PATH_SHAPE[exc.errno]
    where = f"{exc.filename}: " if exc.filename else ""
    return PkgmgrError(f"{where}{why}", code=code,
                       details={"path": str(exc.filename) if exc.filename else None,
                                "errno": errno.errorcode.get(exc.errno, exc.errno)},
                       hint="check that path, and the environment variables or links that lead to it")


def _os_error_opening(path: object) -> OSError | None:
    """The OS's own error opening the database file (or, when it is missing, its directory) for
    reading, when it is one `io_error` knows; None when it opens."""
    import os

    if path is None:
        return None
    for candidate in (str(path), os.path.dirname(str(path)) or "."):
        try:
            os.close(os.open(candidate, os.O_RDONLY))
            return None
        except FileNotFoundError:
            continue
        except OSError as exc:
            return exc if exc.errno in _IO_HINTS else None
    return None


def _filesystem_state(path: object) -> tuple[bool, bool]:
    """(no space left, mounted read-only) for the filesystem holding `path`; (False, False) when unknown."""
    import os

    if path is None:
        return False, False
    directory = os.path.dirname(str(path)) or "."
    try:
        info = os.statvfs(directory)
    except OSError:
        return False, False
    return info.f_bavail == 0, bool(info.f_flag & os.ST_RDONLY)


def suggest_close(error: PkgmgrError, word: str, known: Iterable[str]) -> None:
    """Add "did you mean" to `error` with the names of `known` closest to `word` (SPEC 11)."""
    import difflib

    close = difflib.get_close_matches(word, sorted(set(known) - {word}), n=3, cutoff=0.7)
    if close:
        error.message += "\ndid you mean " + " or ".join(close) + "?"
        error.args = (error.message,)
        error.details.setdefault("suggestions", close)
