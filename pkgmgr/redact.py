"""The one redaction of URLs (SPEC 6, 11: secrets are never printed, logged or stored).

`redact_url` is how any URL may be shown: without its user-info (`user:password@`, or a token
as the user name), without a fragment, and without its query when the query looks signed
(`token=`, `sig=`, `X-Amz-…`, …). `redact_urls` applies it to every URL inside a text: the
command line passes everything it writes — messages, hints, warnings, JSON documents, tables,
tracebacks under `-v` — through it (`pkgmgr.cli.secrets.scrub_secrets`), so a URL quoted by
any message, wherever it came from (a registry source, an entry, an OCI reference, a redirect's
`Location`), is shown redacted.

Imports `re` only (`urllib.parse` when a text holds a URL that needs it): it is on the start-up
path of every command.
"""

from __future__ import annotations

import re

SENSITIVE_QUERY = re.compile(r"token|sig|signature|key|credential|auth|secret|password|jwt|x-amz-|x-goog-", re.I)
# a URL inside a text: a scheme, `://`, then up to whitespace, a quote or a bracket that cannot be
# part of it as written in pkgmgr's messages and JSON
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s\"'<>`]+")


def redact_url(url: object) -> str:
    """The URL as it may be shown: no user-info, no fragment, and no query when it looks signed."""
    from urllib.parse import urlsplit, urlunsplit

    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return "<invalid URL>"
    netloc = parts.netloc.rpartition("@")[2] if "@" in parts.netloc else parts.netloc
    query = parts.query
    if query and SENSITIVE_QUERY.search(query):
        query = "<redacted>"
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _needs_redaction(url: str) -> bool:
    rest = url.split("://", 1)[1]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in authority or "#" in rest:
        return True
    query = rest.partition("?")[2]
    return bool(query) and SENSITIVE_QUERY.search(query) is not None


def redact_urls(text: str) -> str:
    """`text` with every URL in it redacted (`redact_url`); a text without one is returned as is."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m[0]) if _needs_redaction(m[0]) else m[0], text)
