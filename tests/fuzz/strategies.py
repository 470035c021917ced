"""Strategies shared by the fuzz suites (tests/fuzz, marked slow): the settings every target runs
with, edits of a document's text, documents rendered as TOML, and a count of the examples each
target really ran (for docs/reliability.md).

The structural strategies of the per-package property tests (tests/manifest/test_fuzz.py,
tests/bundles/test_fuzz.py) are reused here; this suite runs every target with at least 1,000
examples, derandomized so that CI is deterministic.
"""

from __future__ import annotations

import collections
import datetime as dt
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.reliability.helpers import record

EXAMPLES = 1000
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

_outcomes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)


def ran(target: str, outcome: bool | str) -> None:
    """Count one example of `target` and its outcome: True (accepted), False (refused) or the
    refusal's error code (reported by `report_counts` at the end of the module)."""
    _outcomes[target][outcome if isinstance(outcome, str) else "accepted" if outcome else "refused"] += 1


def report_counts() -> None:
    for target, outcomes in sorted(_outcomes.items()):
        record("fuzz", target=target, examples=sum(outcomes.values()), accepted=outcomes["accepted"],
               outcomes=dict(outcomes))
    _outcomes.clear()


SPICE = ["", " ", "\n", "\\", '"', "'", "'''", '"""', "[", "]", "[[", "]]", "{", "}", "=", ",", "#", "\x00", "\x7f",
         "\ufeff", "\u2028", "\ud800", "1979-05-27T07:32:00Z", "nan", "inf", "-0", "0x1F", "1e400", "9" * 5000,
         "true", "---", ": ", "- ", "&a", "*a", "!!python/object", "\t", "\r\n", "..", "../", "/etc/passwd"]


@st.composite
def edited(draw: st.DrawFn, text: str) -> str:
    """`text` with one to four edits: cut a span, insert text, or duplicate a span."""
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["cut", "insert", "duplicate"]))
        if action == "cut":
            text = text[:position] + text[position + draw(st.integers(1, 40)):]
        elif action == "insert":
            insert = draw(st.sampled_from(SPICE) | st.text(max_size=12))
            text = text[:position] + insert + text[position:]
        else:
            span = text[position:position + draw(st.integers(1, 80))]
            text = text[:position] + span * draw(st.integers(2, 5)) + text[position:]
    return text


def encoded(texts: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """Texts as UTF-8 bytes (lone surrogates kept through surrogatepass: invalid UTF-8 on purpose)."""
    return texts.map(lambda t: t.encode("utf-8", "surrogatepass"))


toml_scalars = (st.booleans() | st.integers(-(2 ** 70), 2 ** 70) | st.floats() | st.text(max_size=16)
                | st.sampled_from(SPICE) | st.just(dt.datetime(1979, 5, 27, 7, 32, tzinfo=dt.UTC))
                | st.just(dt.date(1979, 5, 27)))
toml_values = st.recursive(
    toml_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)


def as_toml(document: Any) -> bytes:
    """`document` rendered as TOML by tomlkit, or its repr when tomlkit cannot render it (a
    surrogate, a non-table root): both are inputs a user could hand us."""
    import tomlkit

    try:
        return tomlkit.dumps(document).encode("utf-8", "surrogatepass")
    except Exception:  # noqa: BLE001 - tomlkit refuses what TOML cannot say; its repr is still input
        return repr(document).encode("utf-8", "surrogatepass")

