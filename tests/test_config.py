"""config.toml: parsing, validation (invalid_config naming file and key), PKGMGR_CONFIG and
PKGMGR_HOST_VERSION; hypothesis over arbitrary TOML-ish documents."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pkgmgr.config import Config, Limits, NetworkSettings, RegistryConfig, config_path, load_config, parse_config
from pkgmgr.errors import PkgmgrError, ValidationFailed
from tests.cli.helpers import FIXTURES, fail, ok

PATH = Path("/etc/pkgmgr/config.toml")


def problems(text: str | bytes) -> list[tuple[str, str, str]]:
    raw = text.encode() if isinstance(text, str) else text
    with pytest.raises(ValidationFailed) as caught:
        parse_config(raw, PATH)
    assert caught.value.code == "invalid_config" and caught.value.exit_code == 3
    return [(p.file, p.key, p.message) for p in caught.value.problems]


def keys(text: str | bytes) -> list[str]:
    found = problems(text)
    assert all(file == str(PATH) for file, _, _ in found)
    return [key for _, key, _ in found]


def test_missing_file_is_the_default_configuration(tmp_path: Path) -> None:
    config = load_config(tmp_path / "home")
    assert config == Config(path=tmp_path / "home" / "config.toml")
    assert config.allow_unverified is True and config.confirm_policy == "on_change"
    assert config.limits == Limits() and config.network == NetworkSettings() and config.registries == ()
    assert config.reserved_agent_names == ("coordinator", "dreaming-curator") and config.host_version is None


def test_every_setting_is_read() -> None:
    config = parse_config(b"""
[host]
version = "1.4.0"
reserved_agent_names = ["boss"]

[policy]
allow_unverified = false
confirm = "always"

[limits]
max_archive_bytes = 10
max_uncompressed_bytes = 20
max_entries = 30
max_ratio = 4.5

[network]
connect_timeout = 1.5
read_timeout = 2
min_rate = 0
min_rate_after = 3
retries = 0
backoff_base = 0.25
parallel = 2

[registries.acme]
source = "https://acme.example/index/"
priority = 10
insecure = true

[registries.local_dir]
source = "/srv/index"
""", PATH)
    assert config.path == PATH and config.host_version == "1.4.0" and config.reserved_agent_names == ("boss",)
    assert (config.allow_unverified, config.confirm_policy) == (False, "always")
    assert config.limits == Limits(max_archive_bytes=10, max_uncompressed_bytes=20, max_entries=30, max_ratio=4.5)
    assert config.network == NetworkSettings(connect_timeout=1.5, read_timeout=2, min_rate=0, min_rate_after=3,
                                             retries=0, backoff_base=0.25, parallel=2)
    assert config.registries == (RegistryConfig("acme", "https://acme.example/index/", 10, True),
                                 RegistryConfig("local_dir", "/srv/index", 100, False))


@pytest.mark.parametrize("text", ["[host\n", "a = ", "x = 1\nx = 2\n", '[policy]\nallow_unverified = "yes\n'])
def test_invalid_toml(text: str) -> None:
    [(file, key, message)] = problems(text)
    assert (file, key) == (str(PATH), "") and message.startswith("not valid TOML")


def test_not_utf8() -> None:
    [(_, _, message)] = problems(b"\xff\xfe[host]")
    assert message.startswith("not valid UTF-8")


@pytest.mark.parametrize("depth", [400, 5000])
def test_deep_nesting_is_invalid_not_a_crash(depth: int) -> None:
    for text in ("a = " + "[" * depth + "]" * depth, "a = " + "{b = " * depth + "1" + "}" * depth):
        try:
            parse_config(text.encode(), PATH)
        except ValidationFailed as error:
            assert error.code == "invalid_config"
        else:  # pragma: no cover - a nested unknown key is never accepted
            pytest.fail("accepted")


def test_unknown_keys_are_named() -> None:
    assert keys("colour = true\n[host]\nversion = '1.0.0'\nflavour = 1\n[policy]\nstrict = 1\n[extra]\n") == [
        "colour", "extra", "host.flavour", "policy.strict"]


def test_wrong_types_are_named() -> None:
    found = keys("""
[host]
version = 1
reserved_agent_names = "coordinator"
[policy]
allow_unverified = "false"
confirm = "sometimes"
[limits]
max_entries = "many"
max_ratio = 0
[network]
parallel = 0
retries = 11
[registries.acme]
priority = "high"
""")
    assert found == ["host.reserved_agent_names", "host.version", "limits.max_entries", "limits.max_ratio",
                     "network.parallel", "network.retries", "policy.allow_unverified", "policy.confirm",
                     "registries.acme", "registries.acme.priority"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+nan"])
def test_non_finite_numbers_are_refused(value: str) -> None:
    found = problems(f"[limits]\nmax_ratio = {value}\n")
    assert {key for _, key, _ in found} == {"limits.max_ratio"}
    assert "must be a finite number" in [message for _, _, message in found]


def test_nan_limit_does_not_disable_the_ratio_check() -> None:
    assert keys("[limits]\nmax_ratio = nan\n[network]\nconnect_timeout = nan\n") == [
        "limits.max_ratio", "network.connect_timeout"]


def test_registry_names_are_checked() -> None:
    assert [k for k in keys('[registries."Bad Name"]\nsource = "x"\n')] == ["registries"]


def test_host_version_must_be_semver() -> None:
    assert problems('[host]\nversion = "1.0"\n') == [
        (str(PATH), "host.version", '"1.0" is not a semantic version (X.Y.Z)')]


def test_host_version_from_the_environment_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PKGMGR_HOST_VERSION", "2.0.0")
    assert parse_config(b'[host]\nversion = "1.0.0"\n', PATH).host_version == "2.0.0"
    assert load_config(tmp_path).host_version == "2.0.0"
    monkeypatch.setenv("PKGMGR_HOST_VERSION", "  ")
    assert load_config(tmp_path).host_version is None


@pytest.mark.parametrize("value", ["2.0", "latest", "1.0.0-rc.01", "01.0.0"])
def test_invalid_host_version_in_the_environment(value: str, monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("PKGMGR_HOST_VERSION", value)
    for load in (lambda: load_config(tmp_path), lambda: parse_config(b"", PATH)):
        with pytest.raises(ValidationFailed) as caught:
            load()
        [problem] = caught.value.problems
        assert (problem.code, problem.file, problem.key) == ("invalid_config", "environment", "PKGMGR_HOST_VERSION")


def test_pkgmgr_config_overrides_the_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text("[policy]\nconfirm = 'always'\n")
    monkeypatch.setenv("PKGMGR_CONFIG", str(other))
    assert config_path(tmp_path / "home") == other
    assert load_config(tmp_path / "home").confirm_policy == "always"
    monkeypatch.setenv("PKGMGR_CONFIG", str(tmp_path / "missing.toml"))
    assert load_config(tmp_path / "home") == Config(path=tmp_path / "missing.toml")


def test_unreadable_config_is_invalid_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()
    with pytest.raises(PkgmgrError) as caught:
        load_config(tmp_path)
    assert caught.value.code == "invalid_config" and "config.toml" in caught.value.message


# --- through the command line ------------------------------------------------------------------------


def test_cli_reports_invalid_config_with_file_and_key(home: Path) -> None:
    home.mkdir()
    (home / "config.toml").write_text("[limits]\nmax_entries = -1\nbogus = 1\n")
    document = fail("invalid_config", "ext", "validate", FIXTURES / "review-pack")
    assert document["error"]["exit_code"] == 3
    assert [(p["file"], p["key"]) for p in document["error"]["details"]["problems"]] == [
        (str(home / "config.toml"), "limits.bogus"), (str(home / "config.toml"), "limits.max_entries")]
    from tests.support.cli import run_cli

    result = run_cli(["ext", "install", FIXTURES / "review-pack", "--allow-unverified", "--yes"])
    assert result.code == 3 and f"{home / 'config.toml'}: limits.bogus: unknown key" in result.stderr


def test_cli_uses_pkgmgr_config(tmp_path: Path, home: Path) -> None:
    other = tmp_path / "strict.toml"
    other.write_text("[policy]\nallow_unverified = false\n")
    fail("unverified_source", "ext", "install", FIXTURES / "review-pack", "--allow-unverified", "--yes",
         env={"PKGMGR_CONFIG": str(other)})
    ok("ext", "install", FIXTURES / "review-pack", "--allow-unverified", "--yes")


def test_cli_reports_an_invalid_host_version(home: Path) -> None:
    document = fail("invalid_config", "ext", "validate", FIXTURES / "review-pack",
                    env={"PKGMGR_HOST_VERSION": "one"})
    assert document["error"]["details"]["problems"][0]["key"] == "PKGMGR_HOST_VERSION"


# --- hypothesis -------------------------------------------------------------------------------------

SECTIONS = {
    "host": ["version", "reserved_agent_names"],
    "policy": ["allow_unverified", "confirm"],
    "limits": ["max_archive_bytes", "max_uncompressed_bytes", "max_entries", "max_ratio"],
    "network": ["connect_timeout", "read_timeout", "min_rate", "min_rate_after", "retries", "backoff_base",
                "parallel"],
}
scalars = st.one_of(
    st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.floats(allow_nan=True),
    st.text(max_size=20), st.sampled_from(["1.0.0", "0.5.0-rc.1", "always", "on_change", "https://x.example/"]),
    st.datetimes(), st.dates(), st.times(),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(min_size=1, max_size=8), inner,
                                                                       max_size=4)), max_leaves=12)


@st.composite
def documents(draw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for section, known in SECTIONS.items():
        if draw(st.booleans()):
            names = draw(st.lists(st.sampled_from(known) | st.text(min_size=1, max_size=8), max_size=5))
            doc[section] = {name: draw(values) for name in names}
    if draw(st.booleans()):
        doc["registries"] = draw(st.dictionaries(
            st.sampled_from(["acme", "local", "Bad Name", "x" * 70, "_x"]) | st.text(min_size=1, max_size=6),
            st.fixed_dictionaries({}, optional={"source": values, "priority": values, "insecure": values,
                                                "other": values}) | values,
            max_size=3))
    if draw(st.booleans()):
        doc[draw(st.text(min_size=1, max_size=8))] = draw(values)
    return doc


def dump(doc: dict[str, Any]) -> str | None:
    try:
        return tomlkit.dumps(doc)
    except Exception:  # noqa: BLE001 - tomlkit cannot write every value; such a draw is skipped
        return None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data())
def test_any_document_is_a_config_or_invalid_config(doc: dict[str, Any], data: Any) -> None:
    text = dump(doc)
    assume(text is not None)
    assert text is not None
    if data.draw(st.booleans()):  # mutate the text too: cut, splice and insert characters
        position = data.draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:position] + data.draw(st.text(max_size=6)) + text[position + data.draw(st.integers(0, 6)):]
    try:
        config = parse_config(text.encode("utf-8", "surrogatepass"), PATH)
    except PkgmgrError as error:
        assert error.code == "invalid_config" and error.exit_code == 3
        return
    assert isinstance(config, Config)
    for number in (config.limits.max_ratio, config.network.connect_timeout, config.network.read_timeout):
        assert math.isfinite(number)


@pytest.mark.parametrize("text", ["host" + ".a" * 10_000 + " = 1\n", "[network]\n" + "x." * 10_000 + "y = nan\n"])
def test_keys_dotted_ten_thousand_deep_are_invalid_config(text: str) -> None:
    """TOML's dotted keys nest tables without the parser recursing; checking them must not recurse."""
    with pytest.raises(ValidationFailed) as caught:
        parse_config(text.encode(), Path("config.toml"))
    assert caught.value.code == "invalid_config"


def test_a_relative_pkgmgr_config_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PKGMGR_CONFIG", "config.toml")
    with pytest.raises(PkgmgrError) as caught:
        config_path(tmp_path)
    assert caught.value.code == "usage" and "absolute" in caught.value.message
    monkeypatch.setenv("PKGMGR_CONFIG", "~/config.toml")  # ~ is the user's, not the directory's
    assert config_path(tmp_path).is_absolute()


def test_a_repository_cannot_supply_the_configuration_through_a_relative_path(tmp_path: Path, home: Path) -> None:
    """PKGMGR_CONFIG=config.toml resolved against the current directory would read the
    repository's file (here: a registry of its own, and no unverified-source policy)."""
    repo = tmp_path / "user-home" / "repo"
    repo.mkdir(parents=True)
    (repo / "config.toml").write_text('[registries.evil]\nsource = "./index"\npriority = 1\n')
    for env in ({"PKGMGR_CONFIG": "config.toml"}, {"PKGMGR_CONFIG": "./config.toml"},
                {"PKGMGR_HOME": "pkgmgr-home"}):
        document = fail("usage", "registry", "list", env=env, cwd=repo)
        assert document["error"]["exit_code"] == 2 and "absolute" in document["error"]["message"]
    assert not home.exists() and sorted(p.name for p in repo.iterdir()) == ["config.toml"]
    assert [r["name"] for r in ok("registry", "list", cwd=repo)["registries"]] == ["default"]


def test_a_config_starting_with_a_byte_order_mark_is_read_and_edited(tmp_path: Path) -> None:
    from pkgmgr.config import edit_config

    path = config_path(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'\xef\xbb\xbf[host]\nversion = "1.2.0"\n')
    assert load_config(tmp_path).host_version == "1.2.0"
    with edit_config(tmp_path) as doc:
        doc["host"]["version"] = "1.3.0"
    assert load_config(tmp_path).host_version == "1.3.0"


def test_compozy_generation_from_config_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PKGMGR_COMPOZY_GENERATION", raising=False)
    path = tmp_path / "config.toml"
    assert parse_config(b"", path).compozy_generation == "auto"
    assert parse_config(b'[host]\ncompozy_generation = "v0.2"\n', path).compozy_generation == "v0.2"
    with pytest.raises(ValidationFailed):
        parse_config(b'[host]\ncompozy_generation = "v9"\n', path)
    monkeypatch.setenv("PKGMGR_COMPOZY_GENERATION", "v0.3")
    assert parse_config(b'[host]\ncompozy_generation = "v0.2"\n', path).compozy_generation == "v0.3"
    monkeypatch.setenv("PKGMGR_COMPOZY_GENERATION", "v0.4")
    with pytest.raises(ValidationFailed) as caught:
        load_config(tmp_path)
    assert caught.value.code == "invalid_config"
