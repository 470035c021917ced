"""The fetcher port is the only door to the network (issue 26 point 4): `pkgmgr.net` imports
nothing from `pkgmgr.registry` (TYPE_CHECKING imports included, as `package_cycles.py` counts
them), and the OCI client needs nothing but the port's methods."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from pkgmgr.net.fetcher import Fetcher

NET = Path(__file__).resolve().parents[2] / "pkgmgr" / "net"


def test_net_imports_nothing_from_the_registry_layer() -> None:
    offending = []
    for path in sorted(NET.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offending += [f"{path.name} imports {n}" for n in names if n.startswith("pkgmgr.registry")]
    assert offending == []


def test_the_oci_client_uses_only_the_fetcher_ports_methods() -> None:
    from pkgmgr.net import oci

    port = {name for name in vars(Fetcher) if not name.startswith("_")}
    assert {"get_small", "download", "send", "close"} <= port
    used = set()
    for node in ast.walk(ast.parse(inspect.getsource(oci))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "http":
            used.add(node.attr)
    assert used and used <= port, used - port


def test_the_http_client_is_a_fetcher() -> None:
    from pkgmgr.net.http import HttpClient

    for name in ("get_small", "download", "send", "close"):
        ours, theirs = inspect.signature(getattr(HttpClient, name)), inspect.signature(getattr(Fetcher, name))
        assert list(ours.parameters) == list(theirs.parameters), name
