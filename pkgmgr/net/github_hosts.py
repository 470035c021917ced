"""GitHub's two bases and the client that may carry its token there (SPEC 6): the REST API
(`PKGMGR_GITHUB_API_URL`, default https://api.github.com) and the raw-content host
(`PKGMGR_GITHUB_RAW_URL`, default https://raw.githubusercontent.com). Every command's one
`HttpClient` is built here (`github_client`); the GitHub protocol itself (`pkgmgr.net.github`)
is imported only by a command that talks to GitHub."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pkgmgr.net.http import HttpClient, token_from_env

if TYPE_CHECKING:
    from pkgmgr.config import NetworkSettings

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_RAW_URL = "https://raw.githubusercontent.com"


def api_url_from_env() -> str:
    return (os.environ.get("PKGMGR_GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")


def raw_url_from_env() -> str:
    return (os.environ.get("PKGMGR_GITHUB_RAW_URL") or DEFAULT_RAW_URL).rstrip("/")


def github_token_hosts(api_url: str | None = None, raw_url: str | None = None) -> frozenset[str]:
    """The origins the token may go to: the API and raw bases (from the environment by default)."""
    return frozenset({api_url or api_url_from_env(), raw_url or raw_url_from_env()})


def github_client(settings: NetworkSettings, *, offline: bool = False, **kwargs: Any) -> HttpClient:
    """An `HttpClient` carrying `GITHUB_TOKEN`/`GH_TOKEN` for the configured GitHub bases only."""
    return HttpClient(settings, token=token_from_env(), token_hosts=github_token_hosts(), offline=offline, **kwargs)
