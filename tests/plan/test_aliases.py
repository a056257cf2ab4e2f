"""Aliases: the plan records them as the SDK sends them, resolution follows the engine's
rules (own aliases, then those inherited from the old URN the parent took over), and
`platformctl diff` compares an aliased pair like one resource and lists it as renamed."""

from __future__ import annotations

import copy
import json

import pulumi
import pulumi_kubernetes as k8s
import pytest

from platformctl.__main__ import main
from platformctl.aliases import resolve
from platformctl.diff import NotAPlan, diff_plans, exit_code, load_plan_json
from platformctl.diff_view import format_diff
from platformctl.engine import render_function
from tests.conftest import stack_plan

STACK_URN = "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"


def _urn(qualified_type: str, name: str) -> str:
    return f"urn:pulumi:s::p::{qualified_type}::{name}"


def _res(qualified_type: str, name: str, parent: str = STACK_URN, *aliases: dict) -> dict:
    return {"urn": _urn(qualified_type, name), "type": qualified_type.rsplit("$", 1)[-1], "name": name,
            "parent": parent, "aliases": list(aliases)}


# --------------------------------------------------------------------------- resolution


def test_own_alias_by_type_and_the_root_stack_is_no_part_of_the_old_urn():
    new = _res("pkg:index:Web", "app", STACK_URN, {"type": "pkg:web:Web"})
    assert resolve({_urn("pkg:web:Web", "app")}, [new]) == ({new["urn"]: _urn("pkg:web:Web", "app")}, [])


def test_own_alias_by_name():
    new = _res("k:T", "after", STACK_URN, {"name": "before"})
    assert resolve({_urn("k:T", "before")}, [new])[0] == {new["urn"]: _urn("k:T", "before")}


def test_own_alias_by_parent():
    parent = _res("pkg:C", "c")
    moved_in = _res("pkg:C$k:T", "x", parent["urn"], {"noParent": True})
    moved_over = _res("pkg:C$k:T", "y", parent["urn"], {"parentUrn": _urn("pkg:D", "d")})
    olds = {parent["urn"], _urn("k:T", "x"), _urn("pkg:D$k:T", "y")}
    assert resolve(olds, [parent, moved_in, moved_over])[0] == {
        moved_in["urn"]: _urn("k:T", "x"), moved_over["urn"]: _urn("pkg:D$k:T", "y")}


def test_children_and_grandchildren_inherit_the_old_urn_their_parent_took_over():
    top = _res("pkg:index:Top", "app", STACK_URN, {"type": "pkg:top:Top"})
    mid = _res("pkg:index:Top$pkg:index:Mid", "app-mid", top["urn"])
    leaf = _res("pkg:index:Top$pkg:index:Mid$k:T", "app-mid-cm", mid["urn"])
    old_mid, old_leaf = _urn("pkg:top:Top$pkg:index:Mid", "app-mid"), _urn("pkg:top:Top$pkg:index:Mid$k:T", "app-mid-cm")
    matched, conflicts = resolve({_urn("pkg:top:Top", "app"), old_mid, old_leaf}, [leaf, mid, top])
    assert matched == {top["urn"]: _urn("pkg:top:Top", "app"), mid["urn"]: old_mid, leaf["urn"]: old_leaf}
    assert conflicts == []


def test_a_child_combines_its_own_alias_with_its_parents_and_follows_a_renamed_parent():
    parent = _res("pkg:index:C", "new", STACK_URN, {"type": "pkg:c:C", "name": "old"})
    # `{parent}-role` names follow the parent's old name, as in the engine.
    child = _res("pkg:index:C$pkg:index:D", "new-role", parent["urn"], {"type": "pkg:d:D"})
    old_child = _urn("pkg:c:C$pkg:d:D", "old-role")
    assert resolve({_urn("pkg:c:C", "old"), old_child}, [parent, child])[0][child["urn"]] == old_child


def test_only_the_alias_the_parent_took_over_is_inherited():
    # The engine multiplies out the parent's matched old URN, not every alias it declares.
    parent = _res("pkg:index:C", "c", STACK_URN, {"type": "pkg:a:C"}, {"type": "pkg:b:C"})
    child = _res("pkg:index:C$k:T", "c-x", parent["urn"])
    matched, _ = resolve({_urn("pkg:a:C", "c"), _urn("pkg:b:C$k:T", "c-x")}, [parent, child])
    assert matched == {parent["urn"]: _urn("pkg:a:C", "c")}


def test_an_old_urn_claimed_twice_is_a_conflict_and_taken_over_once():
    first, second = _res("k:T", "a", STACK_URN, {"name": "old"}), _res("k:T", "b", STACK_URN, {"name": "old"})
    matched, conflicts = resolve({_urn("k:T", "old")}, [first, second])
    assert matched == {first["urn"]: _urn("k:T", "old")}
    assert [tuple(c) for c in conflicts] == [(_urn("k:T", "old"), second["urn"], first["urn"])]
    # An old URN that a new resource still has as its own is not another's to take.
    kept, claimant = _res("k:T", "old"), _res("k:T", "c", STACK_URN, {"name": "old"})
    matched, conflicts = resolve({_urn("k:T", "old")}, [kept, claimant])
    assert matched == {} and [c.rival for c in conflicts] == [kept["urn"]]


# --------------------------------------------------------------------------- diff of hand-made plans


def _plan(*resources: dict) -> dict:
    return {"stack": "s", "resources": [dict(r, inputs={}, custom=False) for r in resources]}


def test_diff_reports_an_old_urn_two_resources_claim_and_takes_it_over_once():
    a, b = _res("k:T", "a", STACK_URN, {"name": "old"}), _res("k:T", "b", STACK_URN, {"name": "old", "stack": "s"})
    d = diff_plans(_plan(_res("k:T", "old")), _plan(a, b))
    assert d["renamed"] == {"p::k:T::old": "p::k:T::a"} and d["added"] == ["p::k:T::b"]
    assert d["errors"] == ["error: duplicate resource alias p::k:T::old applied to p::k:T::b conflicts with p::k:T::a"]
    assert exit_code(d) == 1


def test_a_plan_with_malformed_aliases_or_references_is_not_a_plan(tmp_path):
    path = tmp_path / "resources.json"
    for edit in ({"aliases": "x"}, {"aliases": [1]}, {"aliases": [{"name": 1}]}, {"aliases": [{"colour": "red"}]},
                 {"parent": ["x"]}, {"provider": {"urn": "x"}}):
        path.write_text(json.dumps({"stack": "s", "resources": [_res("k:T", "a") | edit]}))
        with pytest.raises(NotAPlan, match="aliases|parent or provider"):
            load_plan_json(path)


# --------------------------------------------------------------------------- a program through the engine


class _Component(pulumi.ComponentResource):
    def __init__(self, token: str, old_token: str | None, name: str, parent=None):
        aliases = [pulumi.Alias(type_=old_token)] if old_token else []
        super().__init__(token, name, None, pulumi.ResourceOptions(parent=parent, aliases=aliases))


def _program(index: bool, aliased: bool = True, data: str = "a"):
    """An outer component holding a provider and an inner component, which holds a ConfigMap and
    a Deployment that mounts it: with module type tokens, or index tokens that alias them."""

    def token(type_name: str) -> tuple[str, str | None]:
        module = f"test:{type_name.lower()}:{type_name}"
        return (f"test:index:{type_name}", module if aliased else None) if index else (module, None)

    def program():
        outer = _Component(*token("Outer"), "app")
        provider = k8s.Provider("app-k8s", kubeconfig="config", opts=pulumi.ResourceOptions(parent=outer))
        inner = _Component(*token("Inner"), "app-inner", parent=outer)
        on_inner = pulumi.ResourceOptions(parent=inner, provider=provider)
        cm = k8s.core.v1.ConfigMap("app-inner-config", data={"k": data}, opts=on_inner)
        volume = k8s.core.v1.VolumeArgs(name="cfg", config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=cm.metadata.name))
        k8s.apps.v1.Deployment("app-inner-web", spec=k8s.apps.v1.DeploymentSpecArgs(
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"app": "web"}),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels={"app": "web"}),
                spec=k8s.core.v1.PodSpecArgs(containers=[k8s.core.v1.ContainerArgs(name="web", image="web:1")], volumes=[volume]),
            ),
        ), opts=pulumi.ResourceOptions.merge(on_inner, pulumi.ResourceOptions(depends_on=[cm])))

    return render_function(program, "dev").to_json()


def test_the_engine_records_aliases_as_sent_and_urns_carry_the_whole_parent_chain():
    plan = {r["name"]: r for r in _program(index=True)["resources"]}
    assert plan["app"]["aliases"] == [{"type": "test:outer:Outer"}]
    assert plan["app-inner"]["aliases"] == [{"type": "test:inner:Inner"}]
    assert plan["app-inner-config"]["aliases"] == []
    assert plan["app"]["urn"] == "urn:pulumi:dev::inference-platform::test:index:Outer::app"
    assert plan["app-inner-config"]["urn"] == (
        "urn:pulumi:dev::inference-platform::test:index:Outer$test:index:Inner$kubernetes:core/v1:ConfigMap::app-inner-config")


def test_specs_keep_only_the_fields_set():
    def program():
        parent = _Component("test:index:Outer", None, "p")
        pulumi.ComponentResource("test:index:Leaf", "leaf", None, pulumi.ResourceOptions(parent=parent, aliases=[
            pulumi.Alias(name="old", parent=None), pulumi.Alias(stack="other", project="proj", parent=parent),
            "urn:pulumi:dev::inference-platform::test:x:Leaf::leaf"]))

    leaf = next(r for r in render_function(program, "dev").resources if r.name == "leaf")
    assert leaf.aliases == [{"name": "old", "noParent": True},
                            {"stack": "other", "project": "proj", "parentUrn": "urn:pulumi:dev::inference-platform::test:index:Outer::p"},
                            {"urn": "urn:pulumi:dev::inference-platform::test:x:Leaf::leaf"}]


def _without_aliases(plan: dict) -> dict:
    # A plan written before aliases were recorded.
    plan = copy.deepcopy(plan)
    for r in plan["resources"]:
        del r["aliases"]
    return plan


def test_diff_of_retyped_components_with_aliases_renames_everything_and_changes_nothing():
    old, new = _without_aliases(_program(index=False)), _program(index=True)
    d = diff_plans(old, new)
    assert d["changes"] == [] and d["errors"] == []
    assert d["added"] == [] and d["removed"] == []
    # Every URN carries a component type: all five resources move, the provider with them.
    assert len(d["renamed"]) == 5
    provider = "inference-platform::test:index:Outer$pulumi:providers:kubernetes::app-k8s"
    assert d["renamed"]["inference-platform::test:outer:Outer$pulumi:providers:kubernetes::app-k8s"] == provider
    out = format_diff(d, urns=True).splitlines()
    assert f"> rename inference-platform::test:outer:Outer$pulumi:providers:kubernetes::app-k8s -> {provider}" in out
    assert out[0] == "0 to create, 0 to update, 0 to replace, 0 to delete, 5 renamed; 0 errors"


def test_without_aliases_retyped_components_are_deleted_and_created():
    d = diff_plans(_program(index=False), _program(index=True, aliased=False))
    assert d["renamed"] == {}
    assert [c.action for c in d["changes"]] == ["create"] * 5 + ["delete"] * 5
    assert format_diff(d).splitlines()[0] == "5 to create, 0 to update, 0 to replace, 5 to delete; 0 errors"


def test_a_renamed_resource_is_compared_with_its_old_self_and_its_dependents_wait_for_it():
    d = diff_plans(_program(index=False), _program(index=True, data="b"))
    changes = {c.key.rsplit("::", 1)[1]: c for c in d["changes"]}
    config = "inference-platform::test:index:Outer$test:index:Inner$kubernetes:core/v1:ConfigMap::app-inner-config"
    # The Kubernetes provider replaces a ConfigMap whose data changes (a new auto-name); the
    # Deployment that mounts it by that name updates once the new one exists.
    assert changes["app-inner-config"].action == "replace" and changes["app-inner-config"].key == config
    assert changes["app-inner-web"].action == "update"
    assert changes["app-inner-web"].unknown == {"inputs.spec.template.spec.volumes[0].configMap.name": config}
    assert sorted(changes) == ["app-inner-config", "app-inner-web"] and len(d["renamed"]) == 5


# --------------------------------------------------------------------------- a real stack


def _retyped(plan: dict, tokens: dict[str, str], aliases: dict[str, str]) -> dict:
    """The plan with component type tokens replaced in every URN it holds, and the given
    aliases (new token -> old token) declared by the components of those types."""

    def urn(text):
        if not text:
            return text
        stack, project, qualified, name = text.split("::", 3)
        return "::".join([stack, project, "$".join(tokens.get(t, t) for t in qualified.split("$")), name])

    out = copy.deepcopy(plan)
    for r in out["resources"]:
        r.update(urn=urn(r["urn"]), parent=urn(r["parent"]), provider=urn(r["provider"]),
                 dependsOn=sorted(map(urn, r["dependsOn"])), type=tokens.get(r["type"], r["type"]))
        r["aliases"] = [{"type": aliases[r["type"]]}] if r["type"] in aliases else []
    return out


def test_demo_dev_moving_its_components_to_index_tokens_with_aliases_replaces_nothing(tmp_path, capsys):
    plan = stack_plan("demo-dev").to_json()
    # module token -> index token of every component, whichever the components render with today
    moves = {}
    for r in plan["resources"]:
        if r["type"].startswith("inference-platform:"):
            module = next((a["type"] for a in r["aliases"] if "type" in a), r["type"])
            moves[module] = f"inference-platform:index:{module.rsplit(':', 1)[1]}"
    old = _retyped(plan, {index: module for module, index in moves.items()}, {})
    new = _retyped(plan, moves, {index: module for module, index in moves.items()})
    assert len(moves) >= 10 and all(o["urn"] != n["urn"] for o, n in zip(old["resources"], new["resources"], strict=True))

    (tmp_path / "old.json").write_text(json.dumps(_without_aliases(old)))
    (tmp_path / "new.json").write_text(json.dumps(new))
    assert main(["diff", "--urns", str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    count = len(plan["resources"])
    assert out[2] == f"0 to create, 0 to update, 0 to replace, 0 to delete, {count} renamed; 0 errors"
    cluster = "inference-platform::inference-platform:{}:InferencePlatform$inference-platform:{}:Cluster::demo-dev-cluster"
    assert f"> rename {cluster.format('platform', 'cluster')} -> {cluster.format('index', 'index')}" in out

    without = diff_plans(old, _retyped(plan, moves, {}))
    assert without["renamed"] == {} and len(without["added"]) == len(without["removed"]) == count
