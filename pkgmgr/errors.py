"""The one error hierarchy: every failure a user can see is a `PkgmgrError` with a stable code.

Codes and exit statuses are the contract of SPEC section 11. `Problem` is one finding of a
validator (file, key path, rule); validators collect every problem of a file and raise them
together with `ValidationFailed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

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
    "internal": 70,
}


def exit_code_for(code: str) -> int:
    """Exit status of an error code; an unknown code is a bug and maps to 70."""
    return EXIT_CODES.get(code, 70)


@dataclass(frozen=True)
class Problem:
    """One validation finding: which file, which key path, which rule was broken."""

    code: str
    file: str
    key: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"code": self.code, "file": self.file, "key": self.key, "message": self.message}
        if self.line is not None:
            data["line"] = self.line
        return data


class PkgmgrError(Exception):
    """Root of every expected failure. `code` is stable (SPEC 11); `details` is JSON-safe.

    `partial` carries the results a batch command produced before (or beside) the failure;
    the CLI prints them next to the `error` object.
    """

    code: str = "internal"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        hint: str | None = None,
        partial: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if self.code not in EXIT_CODES:
            raise ValueError(f"unknown error code {self.code!r}")
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.hint = hint
        self.partial = partial

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.code)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "exit_code": self.exit_code,
            "details": self.details,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


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
