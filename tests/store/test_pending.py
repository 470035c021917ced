"""`store/pending.py`: the rows of the trees a writer is moving (SPEC 4 `pending`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pkgmgr.store.pending as pending
from pkgmgr.errors import PkgmgrError
from pkgmgr.store.db import transaction
from pkgmgr.store.scope import global_scope

AT = "2026-12-01T00:00:00Z"


def test_record_settle_and_read_back(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    with scope.writer(1):
        pending.record_moving_in(scope, [("extensions/demo/1.0.0", "demo", "1.0.0")], AT)
        with transaction(scope.db) as conn:
            pending.record(conn, [("extensions/demo/0.9.0", "demo", "0.9.0")], pending.OUT, AT)
        rows = pending.recorded(scope.db)
        assert {path: row["pending"] for path, row in rows.items()} == {
            "extensions/demo/0.9.0": "out", "extensions/demo/1.0.0": "in"}
        pending.settle(scope, ["extensions/demo/1.0.0"])
        assert list(pending.recorded(scope.db)) == ["extensions/demo/0.9.0"]
        pending.record_moving_in(scope, [], AT)  # nothing to record: no transaction
        pending.settle(scope, [])
    scope.close()


@pytest.mark.parametrize("path", ["extensions/demo/1.0.0/..", "extensions/other/1.0.0", "state.db",
                                  "extensions/demo/1.0.0~zz"])
def test_a_path_that_is_not_its_rows_directory_is_a_damaged_row(path: str, tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    with scope.writer(1):
        pending.record_moving_in(scope, [(path, "demo", "1.0.0")], AT)
        with pytest.raises(PkgmgrError) as caught:
            pending.recorded(scope.db)
    assert caught.value.code == "state_inconsistent"
    assert caught.value.details["table"] == "pending_trees" and caught.value.details["column"] == "path"
    scope.close()
