"""What an archive says about itself (`pkgmgr.registry.artifact`)."""

from __future__ import annotations

from pathlib import Path

from pkgmgr.config import Config
from pkgmgr.registry.artifact import archive_suffix, inspect_archive, metadata_differences
from pkgmgr.registry.index_format import VersionEntry
from tests.publish.helpers import ok, packed, variant
from tests.support.builders import zip_dir

FIXTURE_DIGEST = "884e12e90219f5ea6d75d52448adb1378cb4e6c4c5758d74994bd4504ee178d4"


def test_inspect_a_packed_fixture(tmp_path: Path) -> None:
    archive = packed(tmp_path, "marketing-linear")
    facts = inspect_archive(archive, config=Config(reserved_agent_names=()))
    assert (facts.name, facts.version, facts.min_compozy_version) == ("marketing-linear", "0.1.0", "0.5.0")
    assert facts.network_digest == FIXTURE_DIGEST and facts.permissions == () and facts.suffix == ".tar.gz"
    assert facts.size == archive.stat().st_size


def test_metadata_differences_name_every_field(tmp_path: Path) -> None:
    facts = inspect_archive(packed(tmp_path, "prompt-enhancer"), config=Config(reserved_agent_names=()))
    agreeing = VersionEntry("0.1.0", "u", facts.sha256, facts.size, "0.5", "", ("session.read",))
    assert metadata_differences("prompt-enhancer", agreeing, facts) == []
    wrong = VersionEntry("0.2.0", "u", facts.sha256, facts.size, "0.6.0", "0" * 64, ())
    found = [line.split(":")[0] for line in metadata_differences("other", wrong, facts)]
    assert found == ["name", "version", "permissions", "network_digest", "min_compozy_version"]


def test_a_zip_archive_is_published_as_zip(tmp_path: Path, index: Path) -> None:
    source = variant(tmp_path / "review-pack-0.1.0", "review-pack")
    archive = zip_dir(tmp_path / "review-pack.zip", source)
    assert archive_suffix(archive) == ".zip"
    doc = ok("registry", "publish", archive, "--index", index)
    assert doc["published"]["url"] == "archives/review-pack-0.1.0.zip"
    assert ok("registry", "validate", index, "--fetch")["valid"] is True
