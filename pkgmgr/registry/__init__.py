"""Registries (SPEC 5): the index model, sources (directory, static HTTP, GitHub), sparse
cached reads, resolution, the protections of SPEC 5.4, and install plans for remote refs."""

from pkgmgr.registry.index_format import (
    Entry,
    Index,
    IndexExtension,
    IndexVersion,
    RegistryMeta,
    VersionEntry,
    build_index,
    entry_path,
    index_document,
    parse_entry,
    parse_index,
    parse_registry,
    read_entries,
    render_index,
)

__all__ = [
    "Entry",
    "Index",
    "IndexExtension",
    "IndexVersion",
    "RegistryMeta",
    "VersionEntry",
    "build_index",
    "entry_path",
    "index_document",
    "parse_entry",
    "parse_index",
    "parse_registry",
    "read_entries",
    "render_index",
]
