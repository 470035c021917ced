"""Every file pkgmgr did not write is read through one bounded primitive (issue 25 point 4):
`pkgmgr.fsutil` (`open_regular_fd`, `read_regular`, `regular_chunks`; `documents.read_json_file`
and `registry.trustroot.read_trusted` over them): regular files only (a FIFO, device or socket
refused at once, never waited on), a size cap, no link followed where the host would not.

The scan below finds every other way of reading a file in `pkgmgr/` — `open(...)`, `os.open`,
`io.open`, `Path.read_bytes`/`read_text` — and fails on any that is not in ALLOWED, each with the
reason it may read directly (a file pkgmgr wrote itself, a descriptor the primitive opened, a
write). A new direct read of a host's file, a tree being hashed or a document from elsewhere
makes it fail: route it through the primitive instead. An entry nothing matches any more fails
too, so the list stays the list of what is there."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "pkgmgr"

OWN_DESCRIPTOR = "reads a descriptor the bounded primitive (or an O_NOFOLLOW walk) opened and checked"
WRITE = "opens a file to write it (created exclusively, or pkgmgr's own)"
REGISTRY_AUTHORING = ("registry authoring: the registry directory the operator publishes to or signs, "
                      "which pkgmgr wrote (what it reads back is what it wrote)")

ALLOWED: dict[str, str] = {
    # the primitive itself
    "fsutil:open_regular_fd:os.open": "the primitive",
    "fsutil:fsync_dir:os.open": "opens a directory to fsync it (O_RDONLY on a directory never blocks)",
    "fsutil:fsync_tree:os.open": "fsync of a tree pkgmgr staged: O_NOFOLLOW | O_NONBLOCK, regular files only",
    "fsutil:syncfs:os.open": "opens a directory pkgmgr staged, to syncfs its filesystem",
    "fsutil:secure_dirs:os.open": "the O_NOFOLLOW directory walk (directories only)",
    "fsutil:_open_child:os.open": "the O_NOFOLLOW directory walk (directories only)",
    # archives and trees: opened through the primitive or an O_NOFOLLOW walk, then read
    "archive.extract:_open_archive:os.open": "the archive named: O_NONBLOCK, refused unless S_ISREG (fstat)",
    "archive.extract:_open_archive:open": OWN_DESCRIPTOR,
    "archive.selection:NoFollowOpener.__init__:os.open": "the O_NOFOLLOW directory walk (directories only)",
    "archive.selection:NoFollowOpener._descend:os.open": "the O_NOFOLLOW directory walk (directories only)",
    "archive.selection:_ignore_spec:open": OWN_DESCRIPTOR,
    "archive.pack:_write_tar:open": OWN_DESCRIPTOR,
    "archive.pack:pack_directory:open": WRITE,
    "archive.files:TreeWriter._create:os.open": WRITE,
    "archive.files:TreeWriter.write_bytes:os.open": WRITE,
    "archive.file_worker:serve:open": "the helper's standard input: the pipe pkgmgr feeds it (archive.offload)",
    "archive.file_worker:_create:os.open": WRITE,
    "archive.files:process_umask:open": "/proc/self/status: the kernel's, not a file anyone plants",
    "hosts.vera:copy_source.walk:os.open": "the O_NOFOLLOW directory walk of a Vera source (directories only)",
    "hosts.vera:copy_source:os.open": "the source directory, O_DIRECTORY | O_NOFOLLOW",
    "fsutil:write_through:os.open": WRITE,
    "hosts.vera:write_markers:os.open": "each marker created exclusively (O_EXCL) to write it, and opened again only to "
                                        "fsync it where there is no syncfs",
    "hosts.vera:_take:os.open": "Vera's lock file, created exclusively (O_EXCL) to take the lock",
    "hosts.vera:boot_time:open": "/proc/stat: the kernel's, not a file anyone plants",
    "hosts.mechanics:sync_tree:os.open": "fsync of the tree pkgmgr staged (extraction refuses FIFOs and devices)",
    # pkgmgr's own files
    "store.lock:open_lock_file:os.open": "pkgmgr's writer lock: O_NOFOLLOW, created by pkgmgr",
    "store.lock:_holder:open": "/proc/locks: the kernel's",
    "cli.output:abandon_stdout:os.open": "/dev/null, to write",
    "errors:_os_error_opening:os.open": "re-opens a path only to name the errno an open already met",
    "schemas:load_schema:open": "pkgmgr's own JSON schemas, shipped in the package",
    "schemas_codegen:schema_digest:read_bytes": "pkgmgr's own JSON schemas (a development tool)",
    "schemas_codegen:main:read_text": "pkgmgr's own generated module (a development tool)",
    "config:load_config:read_bytes": "the operator's own config.toml (under PKGMGR_HOME or named by --config)",
    "config:edit_config:read_text": "the operator's own config.toml, rewritten by 'pkgmgr config set'",
    # registry authoring
    "registry.init:_gitignore:read_text": REGISTRY_AUTHORING,
    "registry.publish:apply_writes:read_bytes": REGISTRY_AUTHORING,
    "registry.publish:_summary_repairs:read_bytes": REGISTRY_AUTHORING,
    "registry.publish:publish:read_bytes": "the archive the operator publishes, judged and hashed just before",
    "registry.publish:build:read_bytes": REGISTRY_AUTHORING,
    "registry.shard_walk:_build_shard:read_bytes": REGISTRY_AUTHORING,
    "registry.shard_walk:finish_build:read_bytes": REGISTRY_AUTHORING,
    "registry.switch:_write:open": WRITE,
    "registry.switch:differs:read_bytes": REGISTRY_AUTHORING,
    "registry.switch:_holds:read_bytes": REGISTRY_AUTHORING,
    "registry.switch:recover:read_bytes": "the journal pkgmgr's registry switch wrote, under the index lock",
    "registry.signing:KeyStore.load:read_bytes": "the operator's own signing keys",
    "registry.signing:_replace_key_file:read_bytes": "the operator's own signing key, kept as .old",
}


def _reads(path: Path, root: Path) -> list[str]:
    """`module:qualname:call` of every direct read (or open) in the module at `path` under `root`."""
    module = path.relative_to(root).with_suffix("").as_posix().replace("/", ".")
    found: list[str] = []
    scope: list[str] = []

    class Visitor(ast.NodeVisitor):
        def visit_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
            scope.append(node.name)
            self.generic_visit(node)
            scope.pop()

        visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_scope

        def visit_Call(self, node: ast.Call) -> None:
            func, call = node.func, None
            if isinstance(func, ast.Name) and func.id == "open":
                call = "open"
            elif isinstance(func, ast.Attribute) and func.attr in ("read_bytes", "read_text"):
                call = func.attr
            elif (isinstance(func, ast.Attribute) and func.attr == "open" and isinstance(func.value, ast.Name)
                  and func.value.id in ("os", "io")):
                call = f"{func.value.id}.open"
            if call is not None:
                found.append(f"{module}:{'.'.join(scope)}:{call}")
            self.generic_visit(node)

    Visitor().visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _all_reads(root: Path = PKG) -> set[str]:
    return {site for path in sorted(root.rglob("*.py")) for site in _reads(path, root)}


def test_no_module_reads_a_file_around_the_bounded_primitive() -> None:
    unlisted = sorted(_all_reads() - set(ALLOWED))
    assert unlisted == [], ("these read a file without the bounded primitive (pkgmgr.fsutil.read_regular, "
                            f"open_regular_fd, regular_chunks): {unlisted}")


def test_every_allowed_read_is_still_there() -> None:
    assert sorted(set(ALLOWED) - _all_reads()) == []


def test_the_scan_sees_a_direct_read(tmp_path: Path) -> None:
    """The control: a module reading a host's file directly is found, as are the ways to do it."""
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "planted.py").write_text(
        "import io, os\n\nclass H:\n    def read(self, folder):\n"
        "        return (folder / 'extensions.json').read_bytes(), open(folder / 'x.exs').read()\n\n"
        "def more(p):\n    return p.read_text(), os.open(p, 0), io.open(p)\n", encoding="utf-8")
    assert _all_reads(tmp_path) == {"hosts.planted:H.read:read_bytes", "hosts.planted:H.read:open",
                                    "hosts.planted:more:read_text", "hosts.planted:more:os.open",
                                    "hosts.planted:more:io.open"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_handed_to_the_file_digest_is_refused_without_blocking(tmp_path: Path) -> None:
    """`patterns.file_digest` (the sha256 of an archive the operator names): a FIFO is refused at
    once, never waited on; a regular file next to it is hashed as before."""
    from pkgmgr.fsutil import NotRegularFile
    from pkgmgr.patterns import file_digest

    fifo = tmp_path / "ext.tar.gz"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile) as caught:
        file_digest(fifo)
    assert caught.value.kind == "a FIFO"
    plain = tmp_path / "plain.tar.gz"
    plain.write_bytes(b"abc")
    assert file_digest(plain) == ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", 3)
