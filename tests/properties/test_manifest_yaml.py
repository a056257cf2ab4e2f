"""Manifests are written by libyaml where it writes PyYAML's bytes; the text never depends on the emitter."""

from __future__ import annotations

import string

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from platformctl import yaml_text
from platformctl.yaml_text import manifest_yaml

PRINTABLE_ASCII = string.printable[:95]
# Strings that steer the emitters' choices: indicators, words YAML reads as other types,
# runs of spaces that a long line folds at, quotes, line breaks and non-ASCII.
TRICKY = " :#-?,[]{}'\"!&*|>%@`~=.\\0123456789eEnNyYtT\n\t\x85\u00e9\u2028"

keys = st.one_of(
    st.text(string.ascii_letters + string.digits + "._/-", min_size=1, max_size=140),
    st.text(string.ascii_letters + string.digits + "._/-@", min_size=1, max_size=140),
    st.sampled_from(["", "true", "null", "1", "1.5", "-", "~", "a b", "a: b", "x" * 127, "x" * 128]),
    st.text(TRICKY, max_size=130),
)
strings = st.one_of(
    st.text(PRINTABLE_ASCII, max_size=200),
    st.text(" ab'", max_size=200),
    st.text(TRICKY, max_size=200),
    st.text(max_size=40),
    st.text(PRINTABLE_ASCII, max_size=200).map(lambda line: line + "\n"),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), strings)
documents = st.dictionaries(
    keys,
    st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
                 max_leaves=20),
    max_size=5,
)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_a_manifest_reads_byte_for_byte_as_pyyaml_writes_it(doc):
    assert manifest_yaml(doc) == yaml.safe_dump(doc, sort_keys=False)


def test_an_envoy_filter_with_type_keys_is_written_by_libyaml_as_pyyaml_writes_it():
    doc = {"apiVersion": "networking.istio.io/v1alpha3", "kind": "EnvoyFilter", "metadata": {"name": "auth"},
           "spec": {"configPatches": [{"patch": {"value": {
               "name": "envoy.filters.http.lua",
               "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"}}}}]}}
    assert yaml_text._libyaml_writes_alike(doc)  # the fast writer, not PyYAML's
    assert manifest_yaml(doc) == yaml.safe_dump(doc, sort_keys=False)


def test_a_response_body_ending_in_a_line_break_is_written_by_libyaml_as_pyyaml_writes_it():
    doc = {"kind": "VirtualService", "spec": {"http": [{"directResponse": {"status": 404, "body": {"string": "Not Found\n"}}}]}}
    assert yaml_text._libyaml_writes_alike(doc)  # the fast writer, not PyYAML's
    assert manifest_yaml(doc) == yaml.safe_dump(doc, sort_keys=False)
