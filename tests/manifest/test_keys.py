"""pkgmgr.manifest.keys: a manifest's keys as Compozy's decoders read them, per generation."""

from __future__ import annotations

import pytest

from pkgmgr.errors import ValidationFailed
from pkgmgr.manifest import load_manifest_bytes
from pkgmgr.manifest.keys import as_read, read_keys

CORE = 'name = "case-folded"\nversion = "1.0.0"\nmin_compozy_version = "0.5.0"\n'


def problems(text: str, *, file: str = "extension.toml", generation: str = "v0.2") -> list[tuple[str, str]]:
    with pytest.raises(ValidationFailed) as caught:
        load_manifest_bytes(text.encode(), file=file, generation=generation)
    return [(problem.key, problem.message) for problem in caught.value.problems]


def test_a_folded_network_block_has_the_canonical_digest() -> None:
    folded = CORE + '[Network_Participation]\nRequired = true\nMODE = "Live"\nChannel_Scopes = ["b", "a"]\n'
    canonical = CORE + '[network_participation]\nrequired = true\nmode = "live"\nchannel_scopes = ["a", "b"]\n'
    digests = {load_manifest_bytes(text.encode(), generation="v0.3").network_digest for text in (folded, canonical)}
    assert len(digests) == 1 and digests != {""}


def test_the_schema_judges_a_folded_key() -> None:
    found = problems(CORE + "[Resources]\nSkills = 5\n")
    assert [key for key, _ in found] == ["resources.skills"]


def test_a_second_spelling_of_a_field_is_left_out_with_a_warning() -> None:
    manifest = load_manifest_bytes((CORE + 'Name = "other"\n').encode(), generation="v0.2")
    assert manifest.name == "case-folded"
    assert any("another spelling of 'name'" in warning for warning in manifest.warnings)


def test_unknown_keys_are_refused_at_v03_only_under_resources_spelt_exactly() -> None:
    text = CORE + '[resources.mcp_servers.db]\ncommand = "db-mcp"\nTransport = "stdio"\n'
    assert problems(text, generation="v0.3") == [
        ("resources.mcp_servers.db.Transport", 'unknown manifest field "resources.mcp_servers.db.Transport" '
                                              "(Compozy v0.3 refuses unknown keys under [resources])")]
    spelt_otherwise = text.replace("[resources.", "[Resources.")
    manifest = load_manifest_bytes(spelt_otherwise.encode(), generation="v0.3")
    assert manifest.mcp_servers[0][0] == "db"
    assert "resources.mcp_servers.db.Transport: unknown key, ignored by Compozy v0.3" in manifest.warnings


def test_legacy_sections_are_refused_only_spelt_exactly() -> None:
    assert problems(CORE + '[security]\ncapabilities = ["session.read"]\n', generation="v0.3-beta.3")[0][0] == "security"
    read = read_keys({"Security": {"capabilities": ["session.read"]}}, "v0.3-beta.3")
    assert (read.document, read.refused) == ({}, [])
    assert read_keys({"Security": {"Capabilities": ["session.read"]}}, "v0.2").document == {
        "security": {"capabilities": ["session.read"]}}


def test_core_table_unknown_keys_stay_pkgmgrs_rule_in_any_spelling() -> None:
    found = problems('[Extension]\nName = "case-folded"\nversion = "1.0.0"\nmin_compozy_version = "0.5.0"\n'
                     "Homepage = 1\n")
    assert found[0][0] == "extension.Homepage" and "pkgmgr's rule" in found[0][1]


def test_as_read_gives_a_recorded_manifest_with_its_fields_spelt_canonically() -> None:
    recorded = {"Resources": {"Bundles": ["bundles"]}, "NETWORK_PARTICIPATION": {"Required": False}}
    assert as_read(recorded) == {"resources": {"bundles": ["bundles"]}, "network_participation": {"required": False}}
    assert as_read(None) == {}
