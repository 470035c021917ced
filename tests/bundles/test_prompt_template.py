"""Trigger prompts as Compozy's ValidateTriggerPromptTemplate judges them (internal/automation/model
template.go; the shapes of its template_test.go, rewritten)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.bundles.prompt_template import prompt_template_problem

ACCEPTED = [
    "No template at all",
    "a lone }} is text",
    "Kind: {{ .Kind }} in {{ .WorkspaceID }} from {{ .Source }} ({{ .Scope }})",
    "Issue: {{ .Data.issue.id }}",
    '{{ index .Data "issue" }}',
    '{{ with .Data }}{{ index . "issue" }}{{ end }}',
    "{{ with .Data.issue }}{{ .title }}{{ else }}{{ .Kind }}{{ end }}",
    "{{ range $k, $v := .Data }}{{ $k }}={{ $v }}{{ end }}",
    "{{ range .Data.items }}{{ . }}{{ else }}{{ .Kind }}{{ end }}",
    "{{ (.Data).issue }}",
    '{{ define "body" }}{{ .Source }}{{ end }}{{ template "body" . }}',
    '{{ block "body" . }}{{ .Kind }}{{ end }}',
    "{{- if eq .Kind \"issue\" -}} new {{- else if .Data.x }} x {{- end }}",
    '{{/* a comment */}}{{ printf "%s" .Data.title | len }}',
    "{{ $t := .Data.title }}{{ $t }}",
]
REFUSED = [
    "{{ .Envelope }}",  # not a field of the envelope
    "{{ .Scope.Name }}",  # Kind, Scope, WorkspaceID and Source have no children
    "{{ (.Source).Name }}",
    '{{ index .Kind "x" }}',  # index reaches into .Data only
    '{{ index . "x" }}',
    "{{ range $k, $v := .Data }}{{ $v.name }}{{ end }}",  # rooted at a variable
    "{{ $.Kind }}",
    "{{ range .Data.items }}{{ .name }}{{ end }}",  # the dot is unknown inside range
    '{{ define "body" }}{{ .Source }}{{ end }}{{ template "body" .Data }}',  # only the root dot is passed
    '{{ define "body" }}static{{ end }}{{ template "body" }}',
    "{{ if .Kind }}",  # parse errors
    "{{ .Data.x",
    "{{ end }}",
    "{{ upper .Kind }}",  # no functions beyond the built-in ones
    "{{ $undefined }}",
    "{{}}",
    "{{ .Data .extra }}",  # two operands, the second unknown
]


@pytest.mark.parametrize("prompt", ACCEPTED)
def test_accepted(prompt: str) -> None:
    assert prompt_template_problem(prompt) is None


@pytest.mark.parametrize("prompt", REFUSED)
def test_refused(prompt: str) -> None:
    assert prompt_template_problem(prompt)


@given(st.text(alphabet="{}()|.$:=-/* \"`'\nabcKindData0123ifelsendrangwith", max_size=80))
@settings(max_examples=500, deadline=None)
def test_any_text_gets_an_answer_never_an_exception(prompt: str) -> None:
    assert prompt_template_problem(prompt) is None or isinstance(prompt_template_problem(prompt), str)


def test_deep_nesting_is_a_problem_not_a_traceback() -> None:
    assert prompt_template_problem("{{" + "(" * 5000 + ".Kind" + ")" * 5000 + "}}")
    # Go's parser takes 3000 nested ifs; pkgmgr's reader stops earlier, and says so
    assert "pkgmgr's limit" in (prompt_template_problem("{{if .Kind}}" * 3000 + "{{end}}" * 3000) or "")
    assert prompt_template_problem("{{if .Kind}}" * 50 + "{{end}}" * 50) is None
