"""Materialising a corpus case's files: relative path -> text, or {"text"|"base64", "mode"}, or
{"symlink": target}. A path may start with `../` (a file beside the extension: what a path that
leaves it reaches)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any


def build(root: Path, files: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, spec in files.items():
        path = Path(os.path.normpath(root / rel))
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o644
        if isinstance(spec, dict) and "symlink" in spec:
            os.symlink(spec["symlink"], path)
            continue
        if isinstance(spec, dict):
            mode = int(spec.get("mode", 0o644))
            data = base64.b64decode(spec["base64"]) if "base64" in spec else spec["text"].encode("utf-8")
        else:
            data = spec.encode("utf-8", "surrogatepass")
        path.write_bytes(data)
        os.chmod(path, mode)
    return root
