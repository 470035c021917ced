"""Start-up cost (SPEC 12): `pkgmgr --version` and `ext list -o json` import neither requests,
rich nor jsonschema, and a read or an install whose requests all get an answer (or `--offline`)
imports no HTTP stack. Checked in a fresh interpreter, after running the real entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURES, install
from tests.registry.conftest import regdir, static_server  # noqa: F401 - shared fixtures
from tests.registry.helpers import RegistryDir
from tests.support.servers import StaticFileServer

HEAVY = ("requests", "rich", "jsonschema")
# only for a request the standard library's first hop could not answer (a redirect, a failure
# before any response, a proxy)
HTTP_STACK = ("requests", "urllib3", "charset_normalizer", "idna")
DEFERRED = ("hashlib",)  # OpenSSL's load: neither command hashes anything (stdlib modules pinned out)
TUF = ("tuf", "securesystemslib", "cryptography")  # only when a signed registry is read or signed (SPEC 5.4a)
UNUSED_BY_A_PLAIN_INSTALL = ("pkgmgr.bundles.agent", "pkgmgr.bundles.bundle", "pkgmgr.bundles.layout",
                             "pkgmgr.bundles.loader", "pkgmgr.bundles.prompt_template", "pkgmgr.bundles.schedule",
                             "pkgmgr.activation.lifecycle", "pkgmgr.activation.projection",
                             "pkgmgr.hosts.folder", "pkgmgr.hosts.base", "pkgmgr.hosts.terva", "pkgmgr.hosts.eva",
                             "pkgmgr.hosts.vera", "pkgmgr.archive.pack", "pkgmgr.archive.selection",
                             "pkgmgr.store.recovery", "pkgmgr.net.github")
WRAPPER = """
import contextlib, io, json, sys
from pkgmgr.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
loaded = sorted({name.split('.')[0] for name in sys.modules})
own = sorted(name for name in sys.modules if name.startswith('pkgmgr.'))
print(json.dumps({"code": code, "stdout": out.getvalue(), "loaded": loaded, "pkgmgr": own}))
"""


def run_and_list_modules(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("args", [("--version",), ("ext", "list", "-o", "json")])
def test_fast_commands_avoid_heavy_imports(args: tuple[str, ...], home: Path) -> None:
    install(FIXTURES / "review-pack", FIXTURES / "prompt-enhancer", FIXTURES / "marketing-linear")
    (home / "config.toml").write_text('[host]\nversion = "1.0.0"\n')
    report = run_and_list_modules(*args)
    assert report["code"] == 0
    if "list" in args:
        assert len(json.loads(report["stdout"])["extensions"]) == 3
    assert [name for name in HEAVY + TUF + HTTP_STACK + DEFERRED if name in report["loaded"]] == []


def test_tuf_is_imported_only_for_a_signed_registry(home: Path, tmp_path: Path) -> None:
    report = run_and_list_modules("ext", "info", "review-pack", "-o", "json")  # the shipped registry: unsigned
    assert report["code"] == 0
    assert [name for name in TUF if name in report["loaded"]] == []
    from tests.support.signed import signed_index

    index = signed_index(tmp_path / "index")
    listed = run_and_list_modules("registry", "add", "acme", str(index.path), "--root", str(index.root_file))
    assert listed["code"] == 0 and "tuf" in listed["loaded"]  # the wrapper would notice
    listed = run_and_list_modules("registry", "list", "-o", "json")
    assert json.loads(listed["stdout"])["registries"][0]["signed"] is True
    assert [name for name in TUF if name in listed["loaded"]] == []


def test_the_wrapper_would_notice_a_heavy_import() -> None:
    install(FIXTURES / "review-pack")
    report = run_and_list_modules("ext", "list")  # human output renders a rich table
    assert "rich" in report["loaded"]


@pytest.mark.parametrize("args", [("ext", "search", "demo"), ("--offline", "ext", "search", "demo"),
                                  ("ext", "info", "demo-ext")])
def test_a_warm_read_imports_no_http_stack(args: tuple[str, ...], home: Path, regdir: RegistryDir,
                                           static_server: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.1.0")
    assert run_and_list_modules("registry", "add", "acme", static_server.url + "/")["code"] == 0
    cold = run_and_list_modules(*args[-3:], "-o", "json")  # fills the registry cache (bodies: the stdlib too)
    assert cold["code"] == 0 and "http" in cold["loaded"]  # the wrapper would notice
    assert [name for name in HTTP_STACK if name in cold["loaded"]] == []
    static_server.clear()
    warm = run_and_list_modules(*args, "-o", "json")
    assert warm["code"] == 0 and warm["stdout"] == cold["stdout"]
    assert [name for name in HTTP_STACK + HEAVY + TUF if name in warm["loaded"]] == []
    # nothing new to remember and one registry to read: no store switch, no thread pool, no
    # manifest codec (the configuration reads only `pkgmgr.manifest.generations`)
    assert "concurrent" not in warm["loaded"]
    assert [name for name in warm["pkgmgr"] if name in ("pkgmgr.store.switch", "pkgmgr.manifest.codec",
                                                         "pkgmgr.manifest.validate")] == []
    sent = static_server.requests
    if "--offline" in args:
        assert sent == []
    else:  # revalidated: every request conditional, every answer a 304 the stdlib path took
        assert sent and all(r.headers.get("if-none-match") or r.headers.get("if-modified-since") for r in sent)


@pytest.mark.parametrize("fixture", ["review-pack", "marketing-linear"])
def test_validating_a_valid_extension_imports_no_schema_library(fixture: str, home: Path) -> None:
    """The generated validators (`pkgmgr/_schemas_generated/`) decide a valid manifest, bundle
    and layout: neither jsonschema nor fastjsonschema (a build tool) is loaded."""
    report = run_and_list_modules("ext", "validate", str(FIXTURES / fixture), "-o", "json")
    assert report["code"] == 0, report["stdout"]
    assert [name for name in ("jsonschema", "fastjsonschema") if name in report["loaded"]] == []


def test_a_generated_validator_loads_only_itself() -> None:
    """Nor decimal (the generated code's `Decimal` is a stand-in), whatever else a command loads."""
    code = ("import json, sys\nfrom pkgmgr.schemas import schema_problems, surely_valid\n"
            "doc = {'registry': {'format': 1, 'name': 'r', 'serial': 1, 'expires': '2027-01-01T00:00:00Z'}}\n"
            "assert surely_valid(doc, 'registry') and schema_problems(doc, 'registry', file='f', code='c') == []\n"
            "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout)
    assert [name for name in ("jsonschema", "fastjsonschema", "decimal") if name in loaded] == []


def test_an_install_from_a_registry_imports_no_http_stack(home: Path, regdir: RegistryDir,
                                                          static_server: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.1.0")
    regdir.publish("other-ext", "0.2.0")
    assert run_and_list_modules("registry", "add", "acme", static_server.url + "/")["code"] == 0
    report = run_and_list_modules("ext", "install", "demo-ext", "other-ext", "--yes", "-o", "json")
    assert report["code"] == 0, report["stdout"]
    assert [item["name"] for item in json.loads(report["stdout"])["installed"]] == ["demo-ext", "other-ext"]
    assert "http" in report["loaded"] and [name for name in HTTP_STACK if name in report["loaded"]] == []
    assert any(r.path.endswith(".tar.gz") for r in static_server.requests)
    # trees without bundles, for Compozy, into a store without activations: none of the code
    # only other trees or other commands need (issue 19: their import and dataclass cost)
    unused = [name for name in report["pkgmgr"]
              if name in UNUSED_BY_A_PLAIN_INSTALL or name.startswith(tuple(f"{u}." for u in UNUSED_BY_A_PLAIN_INSTALL))]
    assert unused == []


def test_an_install_of_local_paths_imports_no_registry_stack(home: Path, tmp_path: Path) -> None:
    """A batch of local archives and directories is planned without the registries (issue 30: their
    modules, dataclasses and regular expressions were a fifth of such an install's imports), and a
    batch of one without the thread pools."""
    packed = run_and_list_modules("ext", "pack", str(FIXTURES / "review-pack"), "-o", "json",
                                  "--output", str(tmp_path / "review-pack.tar.gz"))
    assert packed["code"] == 0, packed["stdout"]
    for refs in ([str(tmp_path / "review-pack.tar.gz")], [str(FIXTURES / "prompt-enhancer")]):
        report = run_and_list_modules("ext", "install", *refs, "--allow-unverified", "--yes", "-o", "json")
        assert report["code"] == 0, report["stdout"]
        assert [name for name in report["pkgmgr"] if name.startswith("pkgmgr.registry")] == []
        assert [name for name in ("concurrent", "http", "unicodedata") if name in report["loaded"]] == []
    # a name among the refs plans through the registries, as before
    named = run_and_list_modules("ext", "install", str(FIXTURES / "word-count"), "no-such-extension-here", "--yes",
                                 "--allow-unverified", "-o", "json")
    assert "pkgmgr.registry.plan" in named["pkgmgr"]
