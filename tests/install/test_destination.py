"""The pipeline drives any `Destination` (issue 12): a fake one that records what it is asked,
as pypa/installer's tests drive `install()` with a fake destination. What another host's
destination must expect of the pipeline is asserted here."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pkgmgr.config import Config
from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts.port import Announce, Destination
from pkgmgr.hosts.port import Prepared as Verified
from pkgmgr.install.options import InstallOptions
from pkgmgr.install.pipeline import InstallRequest, install
from pkgmgr.store.installed import Installed
from pkgmgr.store.scope import global_scope
from pkgmgr.store.switch import Outcome
from tests.support.builders import write_extension

TRUSTING = InstallOptions(allow_unverified=True, yes=True)


class FakeDestination:
    """Keeps switched trees in a directory of its own and logs every call."""

    def __init__(self, root: Path, *, refuse: str | None = None) -> None:
        self.root = root
        self.calls: list[str] = []
        self.switched: list[Verified] = []
        self.locked = False
        self.refuse = refuse
        self._staged = 0

    @property
    def label(self) -> str:
        return "fake host"

    @contextlib.contextmanager
    def _held(self) -> Iterator[object]:
        self.calls.append("writer")
        self.locked = True
        try:
            yield self
        finally:
            self.locked = False

    def writer(self, timeout: float) -> contextlib.AbstractContextManager[object]:
        return self._held()

    def new_staging(self) -> Path:
        assert self.locked, "staging happens under the writer lock"
        self._staged += 1
        path = self.root / "staging" / str(self._staged)
        path.mkdir(parents=True)
        self.calls.append("new_staging")
        return path

    def discard(self, staging: Path) -> None:
        self.calls.append("discard")
        shutil.rmtree(staging, ignore_errors=True)

    def installed(self, name: str) -> Installed | None:
        self.calls.append(f"installed {name}")
        return None

    def check_switch(self, verified: Verified, options: InstallOptions) -> None:
        self.calls.append(f"check_switch {verified.name}")
        if self.refuse:
            raise PkgmgrError(self.refuse, code="bundle_missing")

    def make_durable(self, verified: list[Verified]) -> None:
        self.calls.append("make_durable " + " ".join(v.name for v in verified))

    def switch(self, verified: Verified, options: InstallOptions, announce: Announce | None = None) -> Outcome:
        assert self.locked, "a switch happens under the writer lock"
        self.calls.append(f"switch {verified.name} {verified.version}")
        if announce is not None:
            announce(verified.summary())
        self.switched.append(verified)
        shutil.copytree(verified.root, self.root / "trees" / verified.name)
        return Outcome("installed", _installed(verified))


def _installed(verified: Verified) -> Any:
    return type("FakeInstalled", (), {"name": verified.name, "version": verified.version})()


def test_the_pipeline_stages_verifies_and_switches_through_the_destination(tmp_path: Path, home: Path) -> None:
    source = write_extension(tmp_path / "src")
    destination = FakeDestination(tmp_path / "host")
    _: Destination = destination  # the fake satisfies the port
    shown: list[dict[str, Any]] = []
    batch = install(InstallRequest(global_scope(home), [str(source)], config=Config(), options=TRUSTING, destination=destination,
                    announce=shown.append))
    [result] = batch.results
    assert result.error is None and result.status == "installed"
    name = destination.switched[0].name
    assert destination.calls == ["writer", "new_staging", f"make_durable {name}",
                                 f"switch {name} {destination.switched[0].version}",
                                 "discard"]
    assert (destination.root / "trees" / name / "extension.toml").is_file()
    assert [s["name"] for s in shown] == [name]
    assert not any((destination.root / "staging").iterdir())  # every staging directory discarded
    assert not (home / "state.db").exists()  # the scope store was never the destination


def test_a_dry_run_asks_the_destination_what_it_would_refuse_and_switches_nothing(tmp_path: Path,
                                                                                  home: Path) -> None:
    source = write_extension(tmp_path / "src")
    destination = FakeDestination(tmp_path / "host", refuse="would lose an activation")
    batch = install(InstallRequest(global_scope(home), [str(source)], config=Config(),
                    options=InstallOptions(allow_unverified=True, yes=True, dry_run=True), destination=destination))
    [result] = batch.results
    assert result.status == "failed" and result.error is not None and result.error.code == "bundle_missing"
    assert [c for c in destination.calls if c.startswith(("switch", "writer", "new_staging"))] == []
    assert any(c.startswith("check_switch") for c in destination.calls)
