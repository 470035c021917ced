"""`pkgmgr registry ...`: the configured registries (add, list, remove, refresh) and the
maintainer's side of a registry index directory (init, publish, validate, build, yank,
unyank; SPEC 5.5 — the work is done by `pkgmgr.registry.publish`, `.init` and
`.validate_index`).

`register(commands)` returns the `registry` group so that more commands can be declared on it.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.cli.context import Context
from pkgmgr.cli.output import Output, Printer
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import user_path
from pkgmgr.hosts import names as host_names

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands
    from pkgmgr.registry.session import Session



def register(commands: "Commands") -> "Commands":
    from pkgmgr.registry.configure import DEFAULT_PRIORITY

    group = commands.group(
        "registry", "manage extension registries",
        "Configure the registries extensions are resolved from. Registries are consulted by ascending priority "
        "(default 100); the shipped registry 'default' (priority 1000) always comes last. The first registry "
        "that lists a name answers for it. Maintainers of a registry index directory (a git repository "
        "like krew-index) create and change it with init, publish, yank/unyank and build, and check it with "
        "validate (in its CI).",
    )

    p = group.command(
        "add", cmd_add, "add a registry",
        "Record a registry in config.toml. SOURCE is a local directory, an https:// base URL of static files "
        "(http:// only on loopback, or with --insecure) or github:OWNER/REPO[@REF] (default REF main). "
        "The source's registry.toml is read once first: a source that cannot be read or parsed is refused "
        "and nothing is recorded (--no-check records it anyway; --offline records it without reading). A signed "
        "registry (TUF metadata in metadata/) is added with --root FILE or --root-sha256 HEX: its root is verified "
        "and pinned, its metadata read at once, and every later read of it goes through TUF verification. Added "
        "again with the same source and root while its trusted root is damaged (as 'pkgmgr doctor' reports it), "
        "it re-establishes that trust and changes nothing else.",
        "pkgmgr registry add acme github:acme/extension-index\n"
        "pkgmgr registry add acme github:acme/extension-index --root acme-root.json\n"
        "pkgmgr registry add mirror https://mirror.example.com/index/ --priority 50\n"
        "pkgmgr registry add local ~/src/my-index --priority 10",
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--priority", type=int, default=None, metavar="N",
                   help=f"lower is consulted first (default {DEFAULT_PRIORITY})")
    p.add_argument("--insecure", action="store_true", help="allow plain http:// to a non-loopback host")
    p.add_argument("--no-check", action="store_true", help="record the source without reading it first")
    pin = p.add_mutually_exclusive_group()
    pin.add_argument("--root", metavar="FILE",
                     help="a signed registry: pin this TUF root.json (every later read is verified against it)")
    pin.add_argument("--root-sha256", metavar="HEX",
                     help="a signed registry: fetch its metadata/1.root.json and pin it if its sha256 is HEX")

    group.command(
        "list", cmd_list, "list the registries",
        "List the registries in resolution order with their source, priority and the highest serial seen.",
        "pkgmgr registry list\npkgmgr registry list -o json",
    )

    p = group.command(
        "remove", cmd_remove, "remove a registry",
        "Remove a registry from config.toml and forget what pkgmgr remembered of its source (its serial and "
        "checksums, kept to refuse a rollback) and its cached files. Installed extensions stay installed.",
        "pkgmgr registry remove acme",
    )
    p.add_argument("name", metavar="NAME")

    p = group.command(
        "refresh", cmd_refresh, "re-read registries now",
        "Drop the cached validators (ETag, Last-Modified) of every registry (or the named one) and read "
        "its registry.toml and index.json again, checking expiry and rollback; the other cached files are "
        "fetched again when next used.",
        "pkgmgr registry refresh\npkgmgr registry refresh acme -o json",
    )
    p.add_argument("name", nargs="?", metavar="NAME")
    p.add_argument("--allow-expired", action="store_true", help="accept a registry whose metadata has expired")
    register_publishing(group)
    return group


def _session(ctx: Context, *, allow_expired: bool = False, config: Any = None) -> "Session":
    from pkgmgr.registry.session import Session

    return Session(ctx.home, config or ctx.config, offline=ctx.offline, allow_expired=allow_expired, warn=ctx.warn)


def _resolution_session(ctx: Context, *, allow_expired: bool = False) -> "Session":
    """The registries as resolution sees them: inside a workspace, those its approved
    pkgmgr.toml declares join the configured ones (SPEC 10), after them, before `default`."""
    from pkgmgr.cli.workspace_registries import session_for

    return session_for(ctx, allow_expired=allow_expired)


def cmd_add(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.configure import NewRegistry, add_registry

    new = NewRegistry(args.name, args.source, priority=args.priority, insecure=bool(args.insecure),
                      check=not args.no_check, root=args.root, root_sha256=args.root_sha256)
    added = add_registry(ctx.home, ctx.config, new, offline=ctx.offline, warn=ctx.warn)
    if added.get("reestablished"):
        return Output({"added": added}, f"re-established the trusted root of registry {added['name']} "
                                        f"({added['source']}, root {str(added['root_sha256'])[:12]})")
    return Output({"added": added}, f"added registry {added['name']} ({added['source']}, priority {added['priority']})")


def cmd_list(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.configure import registry_rows

    session = _resolution_session(ctx)
    try:
        rows = registry_rows(session, ctx.warn)
    finally:
        session.close()

    def human(p: Printer) -> None:
        # a table when it fits the terminal, else a block per registry; what a signed registry's
        # root and expiry are on lines of their own (a table with them was wider than 80 columns)
        table = [(r["name"], r["priority"], "-" if r["serial"] is None else r["serial"],
                  r["source"] + (" (insecure)" if r["insecure"] else "")
                  + (" (declared by the workspace)" if r["workspace"] else "")) for r in rows]
        columns = ["NAME", "PRIORITY", "SERIAL", "SOURCE"]
        if p.fits(columns, table):
            p.table(columns, table)
        else:
            for name, priority, serial, source in table:
                p.line(f"{name} (priority {priority}, serial {serial})")
                p.line(f"  {source}")
        for r in rows:
            if r["signed"]:
                p.line(f"{r['name']}: signed, root {str(r['root_sha256'])[:12]}, expires {r['expires'] or '-'}")

    return Output({"registries": rows}, human)


def cmd_remove(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.configure import remove_registry

    removed = remove_registry(ctx.home, ctx.config, args.name, offline=ctx.offline, warn=ctx.warn)
    return Output({"removed": removed}, f"removed registry {removed['name']} ({removed['source']}); "
                                        "its remembered serial and checksums are forgotten")


def cmd_refresh(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.configure import refresh_registries

    session = _resolution_session(ctx, allow_expired=args.allow_expired)
    try:
        refreshed, failed, error = refresh_registries(session, args.name)
    finally:
        session.close()

    def human(p: Printer) -> None:
        if refreshed:
            p.table(["NAME", "SERIAL", "EXTENSIONS", "SOURCE"],
                    [(r["name"], r["serial"], "-" if r["extensions"] is None else r["extensions"], r["source"])
                     for r in refreshed])
        for f in failed:
            p.line(f"failed {f['name']}: [{f['error']['code']}] {f['error']['message'].splitlines()[0]}")

    return Output({"refreshed": refreshed, "failed": failed}, human, error)


# --- maintaining a registry index directory (SPEC 5.5) -------------------------------------------


def register_publishing(group: "Commands") -> None:
    p = group.command(
        "init", cmd_init, "create a registry index directory",
        "Create a registry index in DIR (created when missing): registry.toml (format 2, serial 0), "
        "extensions/, index/shards.json (format 1: index.json), a .gitignore for the publish lock, and "
        ".github/workflows/validate.yml, a GitHub Actions workflow that installs pkgmgr and runs 'pkgmgr registry "
        "validate . --changed-since <PR base> --fetch' (format 1: --base) on every pull request. A directory that already holds index files is refused and left as it is. The "
        "workflow installs pkgmgr from a pinned pip requirement (default: the git tag of this pkgmgr), never by "
        "bare name: 'pkgmgr' on PyPI is another project.",
        "pkgmgr registry init ./extension-index --name acme\n"
        "pkgmgr registry init ./small-index --name acme --format 1\n"
        "pkgmgr registry init . --description 'Acme extensions' "
        "--pkgmgr-requirement 'pkgmgr @ git+https://github.com/acme/pkgmgr@v0.1.0'",
    )
    p.add_argument("path", metavar="DIR")
    p.add_argument("--name", metavar="N", help="registry name (default: from the directory's name)")
    p.add_argument("--description", default="", metavar="TEXT", help="registry description")
    p.add_argument("--pkgmgr-requirement", metavar="REQ",
                   help="pip requirement the CI workflow installs pkgmgr from (default: this version's git tag)")
    p.add_argument("--sign", action="store_true",
                   help="sign the index with TUF metadata (one Ed25519 key per role, kept outside the index)")
    _signing_options(p)
    p.add_argument("--format", type=int, choices=(1, 2), default=2,
                   help="index format: 2 (hashed entry paths, summary shards and a changes log, for indexes of any "
                        "size: docs/registry-format.md; the default) or 1 (one index.json, which pkgmgr before format "
                        "2 reads)")

    p = group.command(
        "publish", cmd_publish, "publish a release archive into a registry index",
        "Add a version to the entry extensions/<xx>/<name>.toml of the index DIR. SOURCE is an archive built by "
        "'pkgmgr ext pack' or github:OWNER/REPO@TAG (the release's archive asset is downloaded and its download "
        "URL recorded). The archive is validated fully (manifest and bundles); the entry records version, url, "
        "sha256, size, min_compozy_version, network_digest, permissions (security.capabilities) and published. "
        "Without --url a local archive is copied to archives/ and recorded by a relative url; with --push "
        "oci://HOST/REPOSITORY:TAG it is pushed to that OCI registry as a pkgmgr artifact and its digest URL "
        "(oci://HOST/REPOSITORY@sha256:...) is recorded. The serial goes "
        "up by one and the summary is updated (index.json regenerated; format 2: the entry's summary shard, the "
        "shard list and the changes log, nothing else read or written); the entry is edited in place, keeping its "
        "comments. "
        "Publishing a version again with the same sha256 changes nothing; with another sha256 it is refused "
        "(version_exists, exit 6).",
        "pkgmgr ext pack ./my-extension --output dist/my-extension-0.1.0.tar.gz\n"
        "pkgmgr registry publish dist/my-extension-0.1.0.tar.gz --index ./extension-index\n"
        "pkgmgr registry publish github:acme/my-extension@v0.2.0 . --tier community\n"
        "pkgmgr registry publish dist/x-1.0.0.tar.gz --index . "
        "--url https://downloads.example.com/x-1.0.0.tar.gz\n"
        "pkgmgr registry publish dist/x-1.0.0.tar.gz --index . --push oci://ghcr.io/acme/x:1.0.0",
    )
    p.add_argument("source", metavar="SOURCE", help="ARCHIVE or github:OWNER/REPO@TAG")
    _index_arguments(p)
    p.add_argument("--url", metavar="URL", help="record this absolute https:// URL instead of copying the archive")
    p.add_argument("--push", metavar="oci://HOST/REPOSITORY:TAG",
                   help="push the archive to this OCI registry and record its digest URL (oci://HOST/REPOSITORY@sha256:…)")
    p.add_argument("--tier", choices=("official", "community", "unverified"),
                   help="entry tier (default: the entry's current tier, else community)")
    p.add_argument("--asset", metavar="NAME", help="GitHub release asset to publish (exact name)")
    p.add_argument("--published", metavar="DATETIME",
                   help="publication time to record, e.g. 2026-01-01T00:00:00Z (default: now; for reproducible "
                        "rebuilds)")
    p.add_argument("--host", choices=host_names(), metavar="HOST",
                   help="judge the archive by this host's rules (default: from its manifest file)")
    p.add_argument("--description", metavar="TEXT",
                   help="a new entry's description (default: the manifest's, where the host's format has one)")
    _signing_options(p)

    p = group.command(
        "validate", cmd_validate, "check a registry index directory",
        "Check every rule of a registry index: the schema of registry.toml and of every entry, entry names and "
        "shards, versions (semver, unique, sorted), sha256 format, URLs (https://, or relative; http:// only on "
        "loopback), index.json in sync. With --base REV (a git revision of the index repository) every version "
        "published at REV must still be listed and unchanged (only yanked may change). With --fetch every new "
        "version (every version without --base) is downloaded and its size, sha256, manifest name, version, "
        "permissions, network digest, minimum host version and bundles are checked. Every problem is listed "
        "with its file and line; exit 3 (invalid_index) if there is any.",
        "pkgmgr registry validate ./extension-index\n"
        "pkgmgr registry validate . --base origin/main --fetch\n"
        "pkgmgr registry validate . --base \"$BASE_SHA\" --fetch -o json\n"
        "pkgmgr registry validate . --changed-since origin/main",
    )
    _index_arguments(p)
    since = p.add_mutually_exclusive_group()
    since.add_argument("--base", metavar="REV", help="git revision whose published versions must be unchanged")
    since.add_argument("--changed-since", metavar="REV",
                       help="as --base, and in a format-2 index check only the entry files changed since REV and their "
                            "summary shards (an index repository's CI, at any index size)")
    p.add_argument("--fetch", action="store_true", help="download and check every new version's archive")

    p = group.command(
        "build", cmd_build, "regenerate the index's summary (index.json, or format 2's shards)",
        "Regenerate the summary from registry.toml and the entries, deterministically (the same files give the "
        "same bytes): index.json for a format-1 index, the summary shards, shard list and changes log for format 2 "
        "(docs/registry-format.md; the serial goes up when an extension's summary changed). Files are rewritten "
        "only when they change. --format 2 migrates a format-1 index: entry files move to their hashed paths.",
        "pkgmgr registry build ./extension-index\n"
        "pkgmgr registry build ./extension-index --format 2",
    )
    _index_arguments(p)
    p.add_argument("--format", type=int, choices=(1, 2), default=None,
                   help="the index format to build; 2 migrates a format-1 index")
    _signing_options(p)

    for name, handler, text in (("yank", cmd_yank, "yank a published version"),
                                ("unyank", cmd_unyank, "make a yanked version installable again")):
        p = group.command(
            name, handler, text,
            f"Set yanked = {'true' if name == 'yank' else 'false'} on one version of an entry, raise the serial "
            "and regenerate index.json. A yanked version stays listed (its url and sha256 never change) but is "
            "only installed when named exactly. A version already in that state is left as it is (exit 0).",
            f"pkgmgr registry {name} ./extension-index review-pack 0.2.0",
        )
        _index_arguments(p)
        p.add_argument("name", metavar="NAME")
        p.add_argument("version", metavar="VERSION")
        _signing_options(p)

    p = group.command(
        "sign", cmd_sign, "re-sign a signed registry index",
        "Re-sign the TUF metadata of a signed index after a hand edit: every target (registry.toml, the summary, "
        "every entry file and archive as they are now) into the hashed bins targets delegate to (PEP 458; an index "
        "signed before hashed bins migrates here: same root, a new bins key in the keys directory), then targets, "
        "snapshot and timestamp, each one version up. With "
        "--timestamp-only only the timestamp is re-signed (its key alone is needed: a scheduled CI job keeps "
        "it fresh). With --root a new root version is signed too (the same keys, a new expiry), which clients "
        "follow; do it before the root expires (a year by default). publish, yank, unyank and build re-sign by "
        "themselves.",
        "pkgmgr registry sign ./extension-index\n"
        "pkgmgr registry sign . --timestamp-only --keys \"$RUNNER_TEMP/keys\" --timestamp-expiry 72h",
    )
    p.add_argument("path", metavar="DIR")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--timestamp-only", action="store_true", help="re-sign only the timestamp role")
    how.add_argument("--root", action="store_true",
                     help="also sign a new root version (same keys, new expiry: do it before the root expires)")
    _signing_options(p)

    p = group.command(
        "rotate-key", cmd_rotate_key, "replace a role's signing key",
        "Generate a new Ed25519 key for ROLE (root, targets, snapshot or timestamp), write a new root version "
        "that names it, signed by the old root key (and the new one when ROLE is root), and re-sign the other "
        "roles at once: the index is valid right after it, and clients follow the rotation. ROLE bins: targets "
        "delegate the hashed bins to a new key and every bin is signed with it. The old key stays beside the new "
        "one as <role>.key.old.",
        "pkgmgr registry rotate-key ./extension-index timestamp",
    )
    p.add_argument("path", metavar="DIR")
    p.add_argument("role", metavar="ROLE", choices=("root", "targets", "snapshot", "timestamp", "bins"))
    _signing_options(p)

    p = group.command(
        "doctor", cmd_registry_doctor, "settle a change a killed command left in a registry index",
        "Every command that changes an index stages its new files (and signed metadata) under .pkgmgr-staging/ "
        "and then switches them in; one killed midway leaves its staging behind. doctor completes a change whose "
        "staging was complete (every new file goes in, the signed metadata last) and removes one that was not "
        "(nothing of it was in place yet). Every publish, yank, unyank, build, sign and rotate-key does the same "
        "first; registry validate reports a pending change.",
        "pkgmgr registry doctor ./extension-index",
    )
    p.add_argument("path", metavar="DIR")


def _signing_options(p: Any) -> None:
    p.add_argument("--keys", metavar="DIR",
                   help="signing keys directory (default: PKGMGR_SIGNING_KEYS, else <index>/../<name>-keys)")
    p.add_argument("--timestamp-expiry", metavar="DURATION",
                   help="validity of a newly signed timestamp, e.g. 168h (default 7 days)")
    p.add_argument("--expiry", metavar="DURATION",
                   help="validity of newly signed root, targets and snapshot, e.g. 8760h (default 1 year)")


def _expiries(args: argparse.Namespace) -> Any:
    from pkgmgr.registry import signing

    timestamp = getattr(args, "timestamp_expiry", None)
    other = getattr(args, "expiry", None)
    return signing.Expiries(
        signing.parse_expiry(timestamp, "--timestamp-expiry") if timestamp else signing.DEFAULT_TIMESTAMP_EXPIRY,
        signing.parse_expiry(other, "--expiry") if other else signing.DEFAULT_EXPIRY)


def _index_name(index: Path) -> str:
    from pkgmgr.registry import index_format

    raw = index_format.read_capped(index / index_format.REGISTRY_FILE, index_format.REGISTRY_MAX_BYTES, index_format.REGISTRY_FILE)
    return index_format.parse_registry(raw, index_format.REGISTRY_FILE).name


def _check_keys(args: argparse.Namespace, index: Path) -> None:
    """Before changing a signed index: its targets, snapshot and timestamp keys are at hand and
    are the current root's (so the change can be signed), and the expiries parse."""
    from pkgmgr.registry.signing import KeyStore, check_keys, is_signed, keys_dir

    if is_signed(index):
        _expiries(args)
        check_keys(index, KeyStore(keys_dir(index, _index_name(index), args.keys)))


def _signing(args: argparse.Namespace, index: Path) -> Any:
    """How a change to `index` is signed (its keys and expiries), None for an unsigned index:
    publish, yank, unyank and build sign what they change in the same switch (SPEC 5.4a)."""
    from pkgmgr.registry.signing import is_signed

    if not is_signed(index):
        return None
    from pkgmgr.registry.signing import Signing, keys_dir

    return Signing(keys_dir(index, _index_name(index), args.keys), _expiries(args))


def _signed_json(result: Any) -> dict[str, Any] | None:
    return None if result is None else result.to_json()


def _resign(ctx: Context, args: argparse.Namespace, index: Path, *, force: bool = False) -> dict[str, Any] | None:
    """Re-sign a signed index after a change (SPEC 5.4a), under the index's lock; None for an
    unsigned index (nothing to do) unless `force`."""
    from pkgmgr.registry.publish import index_lock
    from pkgmgr.registry.signing import is_signed, keys_dir, sign_index

    if not is_signed(index):
        if force:
            raise PkgmgrError(f"{index} is not a signed registry index (no metadata/1.root.json)", code=Code.USAGE,
                              hint="an index is signed from its start: 'pkgmgr registry init DIR --sign' creates one in an "
                                   "empty DIR, to publish the archives into")
        return None
    keys = keys_dir(index, _index_name(index), args.keys)
    with index_lock(index, ctx.lock_timeout):
        result = sign_index(index, keys, expiries=_expiries(args),
                            timestamp_only=bool(getattr(args, "timestamp_only", False)),
                            resign_root=bool(getattr(args, "root", False)))
    return result.to_json()


def cmd_sign(ctx: Context, args: argparse.Namespace) -> Output:
    index = user_path(args.path)
    signed = _resign(ctx, args, index, force=True)
    assert signed is not None
    versions = signed["versions"]
    return Output({"signed": signed}, f"signed {index}: targets {versions['targets']} ({signed['targets']} "
                                      f"files), snapshot {versions['snapshot']}, timestamp {versions['timestamp']} "
                                      f"(expires {signed['expires']['timestamp']})")


def cmd_rotate_key(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.publish import index_lock
    from pkgmgr.registry.signing import is_signed, keys_dir, rotate_key

    index = user_path(args.path)
    if not is_signed(index):
        raise PkgmgrError(f"{index} is not a signed registry index (no metadata/1.root.json)", code=Code.USAGE)
    keys = keys_dir(index, _index_name(index), args.keys)
    with index_lock(index, ctx.lock_timeout):
        result = rotate_key(index, keys, args.role, expiries=_expiries(args))
    return Output({"rotated": args.role, "signed": result.to_json()},
                  f"rotated the {args.role} key of {index}: root version {result.versions['root']} "
                  f"(sha256 {result.root_sha256}); new key in {keys}")


def cmd_registry_doctor(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.publish import index_lock
    from pkgmgr.registry.switch import recover

    index = user_path(args.path)
    with index_lock(index, ctx.lock_timeout, settle=False):
        settled = recover(index)
    data = {"index": str(index), **settled.to_json()}
    if not settled.completed and not settled.discarded:
        return Output(data, f"{index}: no interrupted change")
    return Output(data, f"{index}: {len(settled.completed)} interrupted change(s) completed, "
                        f"{len(settled.discarded)} never begun removed")


def _index_arguments(p: argparse.ArgumentParser) -> None:
    """The index directory, positionally or as --index DIR (scripts and CI workflows use both)."""
    p.add_argument("path", nargs="?", metavar="DIR", help="the registry index directory (or --index DIR)")
    p.add_argument("--index", metavar="DIR", help="the registry index directory")


def index_dir(args: argparse.Namespace) -> Path:
    """The directory DIR or --index names (one of them, or both the same). Raises usage."""
    given = {text for text in (args.path, args.index) if text is not None}
    if not given:
        raise PkgmgrError("name the registry index directory: DIR or --index DIR", code=Code.USAGE)
    if len({user_path(text).absolute() for text in given}) > 1:
        raise PkgmgrError(f"two index directories given: {args.path} and --index {args.index}", code=Code.USAGE)
    return user_path(given.pop())


def cmd_init(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.init import init_index

    root = user_path(args.path)
    if not args.sign and (args.keys or args.timestamp_expiry or args.expiry):
        raise PkgmgrError("--keys, --timestamp-expiry and --expiry apply with --sign", code=Code.USAGE)
    signing = None
    if args.sign:
        from pkgmgr.registry.init import default_name
        from pkgmgr.registry.signing import keys_dir

        expiries = _expiries(args)  # refuse a bad duration before writing anything
        keys = keys_dir(root, args.name if args.name is not None else default_name(root), args.keys)
    result = init_index(root, name=args.name, description=args.description,
                        requirement=args.pkgmgr_requirement, format=args.format)
    if args.sign:
        from pkgmgr.registry.signing import init_signing

        signing = init_signing(result.path, keys, expiries=expiries).to_json()

    def human(p: Printer) -> None:
        p.line(f"initialized registry {result.name} in {result.path} (serial 0)")
        p.lines(f"  {f}" for f in result.files)
        if signing is not None:
            p.line(f"signed with TUF metadata in {result.path}/metadata")
            p.line(f"  root sha256: {signing['root_sha256']}")
            p.line(f"  keys in {signing['keys']}")
            p.line("  (keep them out of the index; back up root.key offline)")
            p.suggest("  clients add it with:", f"pkgmgr registry add NAME SOURCE --root-sha256 {signing['root_sha256']}")
        keys = f" --keys {shlex.quote(str(signing['keys']))}" if signing is not None else ""
        p.suggest("next:", f"pkgmgr registry publish ARCHIVE --index {shlex.quote(str(result.path))}{keys}")

    data = result.to_json()
    if signing is not None:
        data["signing"] = signing
    return Output({"initialized": data}, human)


def cmd_publish(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli.install_common import reporter_for
    from pkgmgr.registry.artifact import inspect_archive
    from pkgmgr.registry.publish import (
        download_release,
        parse_published,
        private_copy,
        publish,
        require_index,
        tag_warning,
    )

    index = index_dir(args)
    published = parse_published(args.published) if args.published else None
    require_index(index)
    _check_keys(args, index)
    if args.push and args.url:
        raise PkgmgrError("--push records the pushed artifact's URL; it cannot be combined with --url", code=Code.USAGE)
    if args.asset and not args.source.startswith("github:"):
        raise PkgmgrError("--asset applies to a github:OWNER/REPO@TAG source", code=Code.USAGE)
    url, repository, tag = args.url, None, None
    session = None
    try:
        if args.source.startswith("github:"):
            session = _session(ctx)
            release = download_release(session, args.source, args.asset, reporter=reporter_for(ctx),
                                       max_bytes=ctx.config.limits.max_archive_bytes)
            source, repository, tag = release.path, release.repository, release.tag
            url = url or release.url
        else:
            source = user_path(args.source)
        with private_copy(source) as copy:
            facts = inspect_archive(copy, config=ctx.config, host=args.host)
            warning = tag_warning(tag, facts.version) if tag is not None else None
            if warning is not None:
                ctx.warn(warning)
            if args.push:
                from pkgmgr.registry.stores import OciStore, store_for

                session = session or _session(ctx)
                store = store_for(args.push) or OciStore()  # whose reference rules then say what is wrong
                url = store.push(session, args.push, copy, sha256=facts.sha256, size=facts.size,
                                 title=f"{facts.name}-{facts.version}{facts.suffix}")
            result = publish(index, copy, facts, url=url, tier=args.tier, published=published,
                             repository=repository, timeout=ctx.lock_timeout,
                             description=getattr(args, "description", None), signing=_signing(args, index))
    finally:
        if session is not None:
            session.close()
    for warning in (*facts.warnings, *result.warnings):
        ctx.warn(warning)
    signed = _signed_json(result.signed)
    data = {"published": result.to_json(), "changed": result.changed, "serial": result.serial,
            "index": str(index), "repaired_index": result.repaired_index, "signed": signed}
    if not result.changed:
        text = (f"{result.name} {result.version} is already published in {index} with the same sha256; "
                f"nothing changed (serial {result.serial})")
        if result.repaired_index:
            text += "; index.json was out of date and has been rebuilt"
        return Output(data, text)

    def human(p: Printer) -> None:
        p.line(f"published {result.name} {result.version} to {index} (serial {result.serial})")
        if p.quiet:  # -q: that line alone
            return
        p.kv([("  entry", result.entry), ("  url", result.url), ("  sha256", result.sha256),
              ("  size", result.size), ("  tier", result.tier),
              ("  permissions", ", ".join(result.permissions) or "none"),
              ("  network", result.network_digest or "none")])

    return Output(data, human)


def cmd_validate(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.validate_index import http_fetcher, problem_json, problem_line, validate_index

    root = index_dir(args)
    session = _session(ctx) if args.fetch else None
    fetcher, cleanup = http_fetcher(session.http, ctx.config.limits.max_archive_bytes) if session else (None, None)
    try:
        report = validate_index(root, base=args.base or args.changed_since, fetcher=fetcher, config=ctx.config,
                                changed_only=args.changed_since is not None)
    finally:
        if cleanup is not None:
            cleanup()
        if session is not None:
            session.close()
    data = report.to_json()
    if not report.valid:
        count = len(report.problems)
        error = PkgmgrError(
            f"{root}: {count} problem{'s' if count != 1 else ''} in the registry index\n"
            + "\n".join(problem_line(p) for p in report.problems),
            code=Code.INVALID_INDEX, details={"problems": [problem_json(p) for p in report.problems]},
        )
        return Output(data, None, error)
    checks = [f"{report.entries} extension(s)", f"{report.versions} version(s)"]
    if args.base or args.changed_since:
        checks.append(f"published versions unchanged since {args.base or args.changed_since}")
    if args.fetch:
        checks.append(f"{report.fetched} archive(s) fetched and verified")
    return Output(data, f"{root}: valid ({', '.join(checks)})")


def cmd_build(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.publish import build

    index = index_dir(args)
    _check_keys(args, index)
    result = build(index, timeout=ctx.lock_timeout, format=args.format, signing=_signing(args, index))
    state = ("migrated to format 2" if result.migrated else "rebuilt" if result.changed else "already up to date")
    signed = _signed_json(result.signed)
    return Output({**result.to_json(), "signed": signed}, f"{result.path}: {state} (serial {result.serial}, "
                                    f"{result.extensions} extension(s))")


def cmd_yank(ctx: Context, args: argparse.Namespace) -> Output:
    return _set_yanked(ctx, args, True)


def cmd_unyank(ctx: Context, args: argparse.Namespace) -> Output:
    return _set_yanked(ctx, args, False)


def _set_yanked(ctx: Context, args: argparse.Namespace, yanked: bool) -> Output:
    from pkgmgr.registry.publish import set_yanked

    index = index_dir(args)
    _check_keys(args, index)
    result = set_yanked(index, args.name, args.version, yanked, timeout=ctx.lock_timeout,
                        signing=_signing(args, index))
    signed = _signed_json(result.signed)
    word = "yanked" if yanked else "unyanked"
    if result.changed:
        text = f"{word} {result.name} {result.version} (serial {result.serial})"
    else:
        text = (f"{result.name} {result.version} is already {'yanked' if yanked else 'not yanked'}; "
                f"nothing changed (serial {result.serial})")
    return Output({**result.to_json(), "signed": signed}, text)
