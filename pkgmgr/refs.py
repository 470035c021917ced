"""What a user typed on `ext install`: a registry name, a path, a GitHub repository or a URL."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import user_path
from pkgmgr.patterns import ARCHIVE_SUFFIXES, GITHUB_OWNER, GITHUB_REPO
from pkgmgr.patterns import EXTENSION_NAME as NAME_RE

# GitHub's own rules: owners are letters, digits and inner '-'; repositories are never '.' or '..'
_GITHUB_RE = re.compile(
    rf"github:({GITHUB_OWNER})"  # OWNER
    rf"/({GITHUB_REPO})"  # REPO
    r"(?:@(\S+))?"  # TAG
)


@dataclass(frozen=True)
class Ref:
    kind: str  # name | path | github | url
    text: str
    name: str | None = None
    spec: str | None = None  # "" for a bare name; "==1.2.3" style or a specifier set
    exact: str | None = None  # NAME@1.2.3 names an exact version
    path: Path | None = None
    owner: str | None = None
    repo: str | None = None
    tag: str | None = None
    url: str | None = None


def parse_ref(text: str) -> Ref:
    """Classify an install ref (SPEC 4). Raises `usage` for something that is none of them."""
    if not text or text != text.strip() or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise PkgmgrError(f"{text!r} is not an extension reference", code=Code.USAGE)
    if text.startswith("github:"):
        match = _GITHUB_RE.fullmatch(text)
        if not match:
            raise PkgmgrError(f"{text!r}: expected github:OWNER/REPO[@TAG]", code=Code.USAGE)
        owner, repo, tag = match.groups()
        return Ref("github", text, owner=owner, repo=repo, tag=tag)
    if text.startswith(("https://", "http://")):
        return Ref("url", text, url=text)
    if text.startswith((".", "/", "~")) or "/" in text:
        return Ref("path", text, path=user_path(text))
    name, sep, spec = text.partition("@")
    if not NAME_RE.fullmatch(name):
        looks_local = text.lower().endswith(ARCHIVE_SUFFIXES) or os.path.exists(text)
        raise PkgmgrError(
            f"{text!r} is not an extension name (lower-case letters, digits and '-'), a path, "
            "github:OWNER/REPO or an https:// URL",
            code=Code.USAGE,
            hint=f"write ./{text} to install the file or directory of that name" if looks_local else None,
        )
    if not sep:
        return Ref("name", text, name=name, spec="")
    spec = spec.strip()
    if not spec:
        raise PkgmgrError(f"{text!r}: a version or specifier is expected after '@'", code=Code.USAGE)
    from pkgmgr.versions import bare_version, parse_specifier

    version = bare_version(spec)
    if version is not None:  # a PEP 440 version names exactly that version: NAME@0.2 is ==0.2
        return Ref("name", text, name=name, spec=f"=={version}", exact=version)
    try:
        parse_specifier(spec)
    except ValueError as exc:
        raise PkgmgrError(f"{text!r}: {exc}", code=Code.USAGE) from None
    return Ref("name", text, name=name, spec=spec)
