"""Archives: safe extraction, manifest discovery, file selection, reproducible packing and the
tree checksum (SPEC 3).

- `extract.py`, `tar_reader.py`, `zip_reader.py`: extraction into a private staging directory
  (`names.py` for the member-name rules, `limits.py` for the streaming limits, `staging.py`
  for the receiving end).
- `discover.py`: where the manifest root is.
- `selection.py`: which files a source directory contributes; `copy_source_tree`.
- `pack.py`: `ext pack`.
- `checksum.py`: tree checksum, listing, diff and verdict (`tree_report`) for `ext verify`.
"""

from typing import TYPE_CHECKING

from pkgmgr.lazy import lazy_exports

if TYPE_CHECKING:
    from pkgmgr.archive.checksum import (
        TreeDiff,
        TreeRecord,
        diff_listings,
        files_checksum_and_listing,
        tree_checksum,
        tree_checksum_and_listing,
        tree_listing,
        tree_report,
    )
    from pkgmgr.archive.discover import MANIFEST_NAMES, find_manifest_root
    from pkgmgr.archive.extract import extract_archive
    from pkgmgr.archive.pack import PackResult, pack_directory
    from pkgmgr.archive.selection import VCS_NAMES, SourceFile, copy_source_tree, select_files

__getattr__ = lazy_exports(__name__, globals(), {
    "checksum": ("TreeDiff", "TreeRecord", "diff_listings", "files_checksum_and_listing", "tree_checksum",
                 "tree_checksum_and_listing", "tree_listing", "tree_report"),
    "discover": ("MANIFEST_NAMES", "find_manifest_root"),
    "extract": ("extract_archive",),
    "pack": ("PackResult", "pack_directory"),
    "selection": ("VCS_NAMES", "SourceFile", "copy_source_tree", "select_files"),
})

__all__ = [
    "MANIFEST_NAMES",
    "PackResult",
    "SourceFile",
    "TreeDiff",
    "TreeRecord",
    "VCS_NAMES",
    "copy_source_tree",
    "diff_listings",
    "extract_archive",
    "files_checksum_and_listing",
    "find_manifest_root",
    "pack_directory",
    "select_files",
    "tree_checksum",
    "tree_checksum_and_listing",
    "tree_listing",
    "tree_report",
]
