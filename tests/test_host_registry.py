"""`pkgmgr.hosts.HOSTS` is the only list of hosts (SPEC 13): the schemas' `host` enums, the command
line's `--host` choices, the lock file's and the index's checks, and the detection order follow it,
and every host it names meets the port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pkgmgr import hosts
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.hosts.port import Host

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"


def _host_enums(node: Any, where: str = "") -> list[tuple[str, list[str]]]:
    """Every `host` property of a schema that is an enum, with where it is."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "host" and isinstance(value, dict) and "enum" in value:
                found.append((f"{where}/host", value["enum"]))
            found.extend(_host_enums(value, f"{where}/{key}"))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_host_enums(value, f"{where}/{index}"))
    return found


def test_every_schema_host_enum_is_the_registry() -> None:
    enums = [(path.name + where, enum) for path in sorted(SCHEMAS.glob("*.schema.json"))
             for where, enum in _host_enums(json.loads(path.read_text(encoding="utf-8")))]
    assert len(enums) >= 3, enums  # registry_entry, index, workspace
    for where, enum in enums:
        # an index writes `host` only for an extension that is not the default host's (SPEC 5.1)
        assert enum in (list(hosts.names()), list(hosts.others())), f"{where}: {enum} is not {list(hosts.names())}"


@pytest.mark.parametrize("name", list(hosts.HOSTS))
def test_every_host_meets_the_port(name: str) -> None:
    host = hosts.get(name)
    assert isinstance(host, Host) and host.name == name and host.title and host.templates
    assert hosts.get(name) is host  # one instance, made on first use


def test_an_unknown_host_is_a_usage_error() -> None:
    with pytest.raises(PkgmgrError) as caught:
        hosts.get("nohost")
    assert caught.value.code == Code.USAGE and all(name in caught.value.message for name in hosts.HOSTS)


def test_the_command_line_and_the_lock_take_their_hosts_from_it() -> None:
    from tests.support.cli import run_cli

    result = run_cli(["ext", "list", "--host", "nohost"])
    assert result.code == 2 and all(name in result.stderr for name in hosts.HOSTS)
    from pkgmgr.workspace.lockfile import parse_lock

    lock = ('version = 2\n[[extension]]\nname = "x"\nversion = "1.0.0"\nsource = "path+x"\nurl = ""\nsha256 = ""\n'
            'tree_sha256 = "sha256-2:' + "0" * 64 + '"\nnetwork_digest = ""\nhost = "nohost"\ninstall_path = "x"\n')
    with pytest.raises(PkgmgrError) as caught:
        parse_lock(lock.encode())
    assert hosts.spoken(hosts.others()) in str(caught.value.to_json())


def test_manifest_patterns_cover_every_host_in_order() -> None:
    patterns = hosts.manifest_patterns()
    for entry in hosts.HOSTS.values():
        assert all(pattern in patterns for pattern in entry.manifests)
    assert patterns[0] == hosts.HOSTS[hosts.DEFAULT].manifests[0]
    assert hosts.matches("*.x", "a.x") and hosts.matches("a.x", "a.x") and not hosts.matches("a.x", "b.a.x")
