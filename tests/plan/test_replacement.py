"""Replacement rules: present for every type the program declares, read at the pinned
versions, and re-derivable from the installed SDKs and our dynamic providers' diff."""

from __future__ import annotations

import importlib.metadata
import tomllib

import pytest

from inference_platform.weights.s3.bucket import BUCKET_INPUTS, BucketProvider
from inference_platform.weights.s3.upload import UPLOAD_INPUTS, UploadProvider
from platformctl.engine import render_stack
from platformctl.propertypath import ANY, format_path, is_prefix, leaf_changes, parse, reset
from platformctl.replacement import (
    DYNAMIC,
    KUBERNETES_FORCE_NEW,
    OPENSTACK,
    OPENSTACK_DOCSTRING_ERRATA,
    OPENSTACK_SDK_DOCSTRINGS,
    RANDOM,
    SOURCES,
    derive_openstack_docstrings,
    rules_for,
    sdk_class,
    sdk_inputs,
)
from tests.conftest import ROOT
from tests.plan.test_examples import PLANNED, example_plan, example_programs

# Every stack file (stacks/ and the tests' data stacks) and every example program.
STACK_FILES = sorted((ROOT / "stacks").glob("Pulumi.*.yaml")) + sorted((ROOT / "tests").rglob("Pulumi.*.yaml"))


def _stack_name(path):
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


def _plan_of(source: str):
    kind, _, name = source.partition(":")
    if kind == "example":
        return example_plan(name).to_json()
    return render_stack(name, next(p for p in STACK_FILES if _stack_name(p) == name)).to_json()


def _types_without_rules(plan) -> set[str]:
    by_urn = {r["urn"]: r for r in plan["resources"]}
    missing = set()
    for r in plan["resources"]:
        provider = by_urn.get(r["provider"]) if r["provider"] else None
        if rules_for(r, provider and provider["inputs"]) is None:
            missing.add(r["type"])
    return missing


def test_every_stack_file_and_example_is_checked_for_rules():
    assert len(STACK_FILES) >= 6 and sorted(PLANNED) == example_programs()


@pytest.mark.parametrize("source", [f"stack:{_stack_name(p)}" for p in STACK_FILES] + [f"example:{n}" for n in sorted(PLANNED)])
def test_every_type_a_stack_or_example_declares_has_replacement_rules(source):
    missing = _types_without_rules(_plan_of(source))
    assert not missing, f"{source}: no replacement rules read for {sorted(missing)}: add them to platformctl/replacement.py"


def test_weight_uploads_have_rules_although_no_example_stack_declares_one():
    assert rules_for({"type": "pulumi-python:dynamic/s3:Upload", "custom": True}) is not None


def _requirement(package: str) -> str:
    """The version pyproject.toml pins (the program's dependencies)."""
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(p.split("==")[1] for p in pins if p.split("==")[0] == package)


@pytest.mark.parametrize("source", [s for s in SOURCES.values() if s.package], ids=lambda s: s.package)
def test_rules_were_read_at_the_pinned_version(source):
    # When a pin moves, re-read the source named in SOURCES, update the rules, then the version there.
    assert _requirement(source.package) == source.version, f"{source.package} pin moved: re-read {source.read}"
    assert importlib.metadata.version(source.package) == source.version


@pytest.mark.parametrize("type_token", sorted(OPENSTACK_SDK_DOCSTRINGS))
def test_openstack_docstrings_rederive_to_the_checked_in_data(type_token):
    assert sdk_class(type_token).pulumi_type == type_token
    assert derive_openstack_docstrings(type_token) == OPENSTACK_SDK_DOCSTRINGS[type_token]


@pytest.mark.parametrize("type_token", sorted(OPENSTACK))
def test_openstack_rules_differ_from_the_docstrings_only_where_recorded(type_token):
    rules, docs = set(OPENSTACK[type_token]), set(OPENSTACK_SDK_DOCSTRINGS[type_token])
    errata = {name for (t, name) in OPENSTACK_DOCSTRING_ERRATA if t == type_token}
    assert rules ^ docs == errata
    assert rules <= set(sdk_inputs(type_token)), "a rule names an input the SDK does not have"


@pytest.mark.parametrize("type_token", sorted(RANDOM))
def test_every_random_input_replaces(type_token):
    assert set(RANDOM[type_token]) == set(sdk_inputs(type_token))


def _dynamic_replaces(provider, inputs) -> set[str]:
    base = {k: f"old-{k}" for k in inputs}
    found = set()
    for key in inputs:
        result = provider.diff("id", base, {**base, key: f"new-{key}"})
        assert result.changes
        found.update(result.replaces or ())
    return found


@pytest.mark.parametrize(("type_token", "provider", "inputs"), [
    ("pulumi-python:dynamic/s3:Bucket", BucketProvider(), BUCKET_INPUTS),
    ("pulumi-python:dynamic/s3:Upload", UploadProvider(), UPLOAD_INPUTS),
])
def test_dynamic_rules_are_what_the_providers_diff_replaces(type_token, provider, inputs):
    assert _dynamic_replaces(provider, inputs) == set(DYNAMIC[type_token])


def test_kubernetes_table_parses_and_applies_to_the_kinds_we_declare():
    for versions in KUBERNETES_FORCE_NEW.values():
        for kinds in versions.values():
            for paths in kinds.values():
                for p in paths:
                    parse(p)
    deployment = rules_for({"type": "kubernetes:apps/v1:Deployment", "inputs": {}})
    assert {format_path(p) for p in deployment.paths} >= {"metadata.name", "metadata.namespace", "spec.selector"}
    pdb = rules_for({"type": "kubernetes:policy/v1:PodDisruptionBudget", "inputs": {}})
    assert {format_path(p) for p in pdb.paths} == {"metadata.name", "metadata.namespace"}


def test_secret_and_configmap_contents_replace_unless_the_provider_makes_them_mutable():
    def paths(type_token, inputs=None, provider=None):
        return {format_path(p) for p in rules_for({"type": type_token, "inputs": inputs or {}}, provider).paths}

    assert {"data", "stringData", "type"} <= paths("kubernetes:core/v1:Secret")
    assert paths("kubernetes:core/v1:Secret", provider={"enableSecretMutable": "true"}) == {
        "metadata.name", "metadata.namespace", "type"}
    assert "data" in paths("kubernetes:core/v1:Secret", {"immutable": True}, {"enableSecretMutable": True})
    assert {"data", "binaryData"} <= paths("kubernetes:core/v1:ConfigMap")
    assert "data" not in paths("kubernetes:core/v1:ConfigMap", provider={"enableConfigMapMutable": True})


# --------------------------------------------------------------------------- the path language


@pytest.mark.parametrize("text", [
    "spec.selector", "spec.containers[*].image", 'metadata.labels["app.kubernetes.io/name"]', "a[0].b", "labels.x",
])
def test_paths_round_trip(text):
    assert format_path(parse(text)) == text


def test_path_syntax():
    assert parse('a["b.c"][2][*].d') == ("a", "b.c", 2, ANY, "d")
    assert parse("a.*") == ("a", ANY)
    for bad in ("", ".a", "a..b", "a[", 'a["x'):
        with pytest.raises(ValueError):
            parse(bad)


def test_prefix_with_wildcards():
    assert is_prefix(parse("spec.containers[*].image"), ("spec", "containers", 3, "image", "x"))
    assert not is_prefix(parse("spec.containers[*].image"), ("spec", "containers", 3, "args"))
    assert not is_prefix(parse("spec.selector"), ("spec",))


def test_leaf_changes_walk_lists_item_by_item():
    assert leaf_changes({"a": [1, 2]}, {"a": [1, 3, 4]}) == [("a", 1), ("a", 2)]
    assert leaf_changes({"a": {"b": 1}}, {"a": {"c": 1}}) == [("a", "b"), ("a", "c")]


def test_reset_is_pulumis_ignore_changes():
    old, new = {"n": 1, "l": {"x": "1", "y": "2"}}, {"n": 5, "l": {"x": "9", "z": "3"}}
    assert reset(old, new, parse("n")) == {"n": 1, "l": {"x": "9", "z": "3"}}
    assert reset(old, new, parse("l.x")) == {"n": 5, "l": {"x": "1", "z": "3"}}
    assert reset(old, new, parse("l.z")) == {"n": 5, "l": {"x": "9"}}
    assert reset(old, new, parse("l[*]")) == {"n": 5, "l": {"x": "1"}}
    assert reset({}, {"a": [1, 2]}, parse("a[1]")) == {"a": [1, 2]}
