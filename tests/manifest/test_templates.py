from __future__ import annotations

import pytest

from pkgmgr.manifest import is_env_name, looks_secret, resolve_template
from pkgmgr.manifest.templates import template_problems


def test_resolve_expands_config_dir_and_hides_env_values() -> None:
    environ = {"REPO_ROOT": "/secret/value", "EMPTY": ""}
    text = "{{config_dir}}/bin --root={{env:REPO_ROOT}} --x={{env:MISSING}} --e={{env:EMPTY}}"
    shown = resolve_template(text, "/opt/ext", environ)
    assert shown == "/opt/ext/bin --root=<REPO_ROOT:set> --x=<MISSING:unset> --e=<EMPTY:set>"
    assert "/secret/value" not in shown


def test_resolve_leaves_unknown_and_unterminated_templates() -> None:
    assert resolve_template("{{other}} {{env:A", "/r", {"A": "1"}) == "{{other}} {{env:A"


def test_config_dir_containing_a_template_is_not_expanded_again() -> None:
    assert resolve_template("{{config_dir}}", "/x/{{env:A}}", {"A": "v"}) == "/x/{{env:A}}"


@pytest.mark.parametrize("text", ["plain", "{{config_dir}}/x", "{{env:A}}{{env:_B1}}", "{{unknown}}", "{{ env:A }}"])
def test_valid_templates(text: str) -> None:
    assert template_problems(text) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{env:REPO_ROOT", "unterminated {{env: template"),
        ("ok {{env:A}} then {{env:B", "unterminated {{env: template"),
        ("{{env:}}", '"" is not an environment variable name'),
        ("{{env:1A}}", '"1A" is not an environment variable name'),
        ("{{env:A-B}}", '"A-B" is not an environment variable name'),
    ],
)
def test_invalid_templates(text: str, message: str) -> None:
    assert any(message in problem for problem in template_problems(text))


@pytest.mark.parametrize("name", ["A", "_", "a_b", "PATH", "X1"])
def test_env_names(name: str) -> None:
    assert is_env_name(name)


@pytest.mark.parametrize("name", ["", "1A", "A-B", "A B", "A\n", "É"])
def test_not_env_names(name: str) -> None:
    assert not is_env_name(name)


@pytest.mark.parametrize(
    "key",
    ["GITHUB_TOKEN", "github_token", "DB_PASSWORD", "MY_PASSWD", "OPENAI_API_KEY", "MYAPIKEY", "SSH_PRIVATE_KEY",
     "AUTHORIZATION", "BEARER_VALUE", "AWS_CREDENTIALS", "CLIENT_SECRET", "TOKEN_URL_X"],
)
def test_secret_like_keys(key: str) -> None:
    assert looks_secret(key)


@pytest.mark.parametrize(
    "key",
    ["LOG_LEVEL", "REPO_ROOT", "TOKEN_URL", "AUTH_TOKEN_URI", "SECRET_PATH", "credentials_file", "SECRETS_DIR", "KEY"],
)
def test_not_secret_like_keys(key: str) -> None:
    assert not looks_secret(key)
