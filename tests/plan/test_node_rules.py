"""The GPU node contract as Node Feature Discovery applies it: marker DaemonSets, NodeFeatureRules,
the PCI taint rule, the NFD settings of the GPU operator, and the contract's config checks.

Nodes are simulated the way NFD v0.19.0 treats them: nfd-worker parses the marker's feature
file (source/local/local.go: `# +no-label` drops the next feature's label), nfd-master runs
every rule on the node's features (pkg/apis/nfd/nodefeaturerule/rule.go: matchFeatures is an
AND; an instance feature matches when one instance matches every expression) and records the
taints, refusing a repeated key and effect (k8s.io/kubernetes pkg/util/taints ParseTaints).
"""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml

from inference_platform.core.node_contract import (
    CLUSTER_API_GPU_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_MODEL_LABEL,
    GPU_TAINT,
    GROUP_LABEL,
    MAGNUM_GPU_LABEL,
    MIG_CONFIG_LABEL,
)
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.settings.stack import Settings
from inference_platform.tuning import runs as tuning
from platformctl.diff import diff_plans
from platformctl.engine import render_stack, stack_settings
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import ROOT, STACKS, as_magnum, base_config, on_heat, render_raw, stack_plan
from tests.support import conformance

STACK_FILE = "stacks/Pulumi.test-dev.yaml"
RULE = "kubernetes:nfd.k8s-sigs.io/v1alpha1:NodeFeatureRule"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
RELEASE = "kubernetes:helm.sh/v3:Release"
CONTRACT = "inference-platform:node_rules:NodeContract"
FEATURES_DIR = "/etc/kubernetes/node-feature-discovery/features.d"
# An NVIDIA 3D controller (an H100) and a NIC, as nfd-worker's pci source reports them.
NVIDIA_GPU = {"vendor": "10de", "class": "0302", "device": "2330"}
NIC = {"vendor": "15b3", "class": "0200", "device": "101d"}


# --------------------------------------------------------------------------- NFD, simulated


def parse_feature_file(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """(local.feature, local.label) of one feature file."""
    features: dict[str, str] = {}
    labels: dict[str, str] = {}
    skip_label = skip_feature = False
    for line in (raw.strip() for raw in text.split("\n")):
        if not line:
            continue
        if line.startswith("#"):
            skip_label |= line == "# +no-label"
            skip_feature |= line == "# +no-feature"
            continue
        key, _, value = line.partition("=")
        value = value if "=" in line else "true"
        if not skip_feature:
            features[key] = value
        if not skip_label:
            labels[key] = value
        skip_label = skip_feature = False
    return features, labels


def _matches(expressions: dict[str, Any], elements: dict[str, str]) -> bool:
    for name, expr in expressions.items():
        op = expr["op"]
        if op == "In":
            if elements.get(name) not in expr["value"]:
                return False
        elif op == "Exists":
            if name not in elements:
                return False
        else:
            raise NotImplementedError(f"operator {op} is not simulated")
    return True


def _term_matches(term: dict[str, Any], features: dict[str, Any]) -> bool:
    value = features.get(term["feature"])
    if value is None:
        return False
    if isinstance(value, list):  # instance feature
        return any(_matches(term["matchExpressions"], instance) for instance in value)
    return _matches(term["matchExpressions"], value)


def apply_rules(rules: list[dict[str, Any]], features: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, str]]]:
    """Labels and taints nfd-master gives a node with these features."""
    labels: dict[str, str] = {}
    taints: list[dict[str, str]] = []
    for spec in rules:
        for rule in spec["rules"]:
            assert set(rule) <= {"name", "labels", "taints", "matchFeatures"}, rule
            if all(_term_matches(t, features) for t in rule["matchFeatures"]):
                labels.update(rule.get("labels", {}))
                taints += rule.get("taints", [])
    keys = [(t["key"], t["effect"]) for t in taints]
    assert len(keys) == len(set(keys)), f"nfd-master's ParseTaints refuses a repeated key and effect: {keys}"
    return labels, taints


def node_features(marker: Optional[dict[str, Any]], pci: list[dict[str, str]]) -> dict[str, Any]:
    """Features of a node: what its marker wrote (None before the marker ran) and its PCI devices."""
    features: dict[str, Any] = {"pci.device": pci}
    if marker is not None:
        local, local_labels = parse_feature_file(feature_content(marker))
        assert local_labels == {}, "the marker's feature must not become a label of its own"
        features["local.feature"] = local
    return features


# --------------------------------------------------------------------------- plan helpers


def rule_specs(plan) -> list[dict[str, Any]]:
    return [r.inputs["spec"] for r in plan.of_type(RULE)]


def markers(plan) -> list:
    return [r for r in plan.of_type(DAEMONSET) if r.inputs["metadata"]["labels"].get("app.kubernetes.io/component") == "node-group-marker"]


def marker_of(plan, group: NodeGroup):
    (found,) = [r for r in markers(plan) if r.inputs["spec"]["template"]["spec"]["nodeSelector"] == group.selector]
    return found


def _write_container(marker) -> dict[str, Any]:
    (init,) = marker.inputs["spec"]["template"]["spec"]["initContainers"]
    return init


def feature_content(marker) -> str:
    env = {e["name"]: e["value"] for e in _write_container(marker)["env"]}
    return env["CONTENT"]


def expected_labels(group: NodeGroup, magnum: Optional[str] = None) -> dict[str, str]:
    """The contract, spelt out from the settings: group, model, sharing config, the user's labels,
    and on a Magnum cluster (`magnum`: the driver that labels its nodes) the autoscaler's GPU label."""
    labels = {GROUP_LABEL: group.name, **group.labels}
    if group.gpu is not None:
        labels[GPU_MODEL_LABEL] = group.gpu.model
        s = group.gpu.sharing
        if s.mode == "mig":
            labels[MIG_CONFIG_LABEL] = s.mig_profile if isinstance(s.mig_profile, str) else f"custom-{group.name}"
        elif s.mode != "none":
            labels[DEVICE_PLUGIN_CONFIG_LABEL] = f"{s.mode}-{s.replicas}" + ("-renamed" if s.rename_by_default else "")
        whole = s.mode in ("none", "time-slicing", "mps") and not s.rename_by_default or (s.mode == "mig" and s.effective_mig_strategy == "single")
        if magnum == "heat" and whole:
            labels[MAGNUM_GPU_LABEL] = "true"
        elif magnum is not None and whole:
            labels[CLUSTER_API_GPU_LABEL] = group.gpu.model
    return labels


def expected_taints(group: NodeGroup) -> set[tuple[str, str, str]]:
    taints = {(t.key, t.value, t.effect) for t in group.taints}
    if group.gpu is not None and not any(t.key == GPU_TAINT["key"] for t in group.taints):
        taints.add((GPU_TAINT["key"], GPU_TAINT["value"], GPU_TAINT["effect"]))
    return taints


def as_set(taints: list[dict[str, str]]) -> set[tuple[str, str, str]]:
    return {(t["key"], t["value"], t["effect"]) for t in taints}


def parse(raw: dict) -> Settings:
    return parse_settings(raw, STACK_FILE)


# --------------------------------------------------------------------------- conformance


@pytest.mark.parametrize("stack", STACKS)
def test_every_node_feature_rule_validates_against_the_nfd_crd(stack, reference):
    assert ("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule") in conformance.crd_schemas()
    rules = stack_plan(stack).of_type(RULE)
    assert len(rules) >= len(stack_settings(stack).cluster.node_groups)
    for r in rules:
        conformance.validate_custom(manifest(r))
    # The schema refuses what NFD does not know.
    bad = copy.deepcopy(manifest(rules[0]))
    bad["spec"]["rules"][0]["lables"] = {}
    with pytest.raises(Exception, match="lables"):
        conformance.validate_custom(bad)


@pytest.mark.parametrize("stack", STACKS)
def test_markers_validate_and_select_exactly_their_groups_nodes(stack, reference):
    settings, plan = stack_settings(stack), stack_plan(stack)
    assert len(markers(plan)) == len(settings.cluster.node_groups)
    for group in settings.cluster.node_groups:
        marker = marker_of(plan, group)
        conformance.validate_core(manifest(marker))
        pod = marker.inputs["spec"]["template"]["spec"]
        # On the group's nodes whatever their taints, NoExecute ones included.
        assert pod["tolerations"] == [{"operator": "Exists"}]
        (volume,) = pod["volumes"]
        assert volume["hostPath"] == {"path": FEATURES_DIR, "type": "DirectoryOrCreate"}
        assert marker.inputs["metadata"]["namespace"] == "gpu-operator"


def test_the_marker_writes_its_feature_file_whole(tmp_path):
    plan = stack_plan("demo-dev")
    for group in stack_settings("demo-dev").cluster.node_groups:
        init = _write_container(marker_of(plan, group))
        env = {e["name"]: e["value"] for e in init["env"]}
        assert init["volumeMounts"] == [{"name": "features-d", "mountPath": env["DIR"]}]
        (tmp_path / "features.d").mkdir(exist_ok=True)
        for _ in range(2):  # a restarted marker rewrites the same file
            subprocess.run(init["command"], env={**os.environ, **env, "DIR": str(tmp_path / "features.d")}, check=True)
        (written,) = (tmp_path / "features.d").iterdir()  # no dot file left behind
        assert written.name == env["FILE"] and not written.name.startswith(".")
        assert parse_feature_file(written.read_text()) == ({GROUP_LABEL: group.name}, {})
        written.unlink()


# --------------------------------------------------------------------------- the contract per stack


def test_demo_dev_nodes_get_exactly_their_groups_contract():
    settings, plan = stack_settings("demo-dev"), stack_plan("demo-dev")
    rules = rule_specs(plan)
    assert len(rules) == len(settings.cluster.node_groups)  # no PCI taint rule on an existing cluster
    for group in settings.cluster.node_groups:
        pci = [NVIDIA_GPU, NIC] if group.is_gpu else [NIC]
        labels, taints = apply_rules(rules, node_features(marker_of(plan, group), pci))
        assert labels == expected_labels(group)
        assert as_set(taints) == expected_taints(group)
        # Before its marker ran, a node of an existing cluster gets nothing from the platform.
        assert apply_rules(rules, node_features(None, pci)) == ({}, [])
    mig = settings.node_group("gpu-a100")
    assert expected_labels(mig)[MIG_CONFIG_LABEL] == "all-1g.10gb"


def test_acme_prod_nodes_get_exactly_their_groups_contract():
    settings, plan = stack_settings("acme-prod"), stack_plan("acme-prod")
    rules = rule_specs(plan)
    assert len(rules) == len(settings.cluster.node_groups) + 1
    for group in settings.cluster.node_groups:
        pci = [NVIDIA_GPU, NIC] if group.is_gpu else [NIC]
        labels, taints = apply_rules(rules, node_features(marker_of(plan, group), pci))
        assert labels == expected_labels(group, settings.cluster.magnum_labeller)
        assert as_set(taints) == expected_taints(group)
        # At nfd-worker's first discovery, before the marker: a GPU node is tainted already.
        early = apply_rules(rules, node_features(None, pci))
        assert early == ({}, [GPU_TAINT] if group.is_gpu else [])
    assert expected_labels(settings.node_group("gpu-l4"))[DEVICE_PLUGIN_CONFIG_LABEL] == "time-slicing-4"


def test_each_drivers_autoscaler_gpu_label_only_on_groups_that_advertise_whole_gpus():
    groups = {
        "whole": {"model": "H100-80GB"},
        "mig-single": {"model": "A100-80GB", "sharing": {"mode": "mig", "migStrategy": "single", "migProfile": "all-1g.10gb"}},
        "mig-mixed": {"model": "A100-80GB", "sharing": {"mode": "mig", "migStrategy": "mixed", "migProfile": {"1g.10gb": 2}}},
        "shared": {"model": "L4-24GB", "sharing": {"mode": "time-slicing", "replicas": 4}},
        "renamed": {"model": "L4-24GB", "sharing": {"mode": "mps", "replicas": 4, "renameByDefault": True}},
    }
    for name, gpu in groups.items():
        for heat in (True, False):
            raw = as_magnum(base_config()) | {"services": []}
            raw["cluster"]["nodeGroups"][1] |= {"name": name, "flavor": "g1", "gpu": gpu}
            # magnum-capi-helm takes no sharing of its own (its cluster's GPU operator is the chart's).
            raw = on_heat(raw) if heat else raw
            settings, plan = parse(raw), render_raw(raw)
            group = settings.node_group(name)
            labels, _ = apply_rules(rule_specs(plan), node_features(marker_of(plan, group), [NVIDIA_GPU]))
            driver = "heat" if heat else "magnum-cluster-api"
            assert labels == expected_labels(group, driver), (driver, name)
            whole = name in ("whole", "mig-single", "shared")
            assert (MAGNUM_GPU_LABEL in labels) == (heat and whole), (driver, name)
            # The clusterapi provider's GPULabel, valued with the GPU type it reports.
            assert labels.get(CLUSTER_API_GPU_LABEL) == (group.gpu.model if whole and not heat else None), (driver, name)


def test_user_labels_and_noexecute_taints_reach_the_nodes_and_nfd_tolerates_them():
    raw = base_config()
    raw["cluster"]["nodeGroups"][1] |= {"labels": {"example.com/team": "ml"},
                                        "taints": [{"key": "example.com/dedicated", "value": "ml", "effect": "NoExecute"}]}
    raw["cluster"]["nodeGroups"][0]["taints"] = [{"key": "example.com/batch", "effect": "PreferNoSchedule"}]
    settings, plan = parse(raw), render_raw(raw)
    for magnum in (False, True):
        if magnum:
            raw = as_magnum(raw)
            raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
            settings, plan = parse(raw), render_raw(raw)
        for group in settings.cluster.node_groups:
            pci = [NVIDIA_GPU] if group.is_gpu else []
            labels, taints = apply_rules(rule_specs(plan), node_features(marker_of(plan, group), pci))
            assert labels == expected_labels(group, settings.cluster.magnum_labeller) and as_set(taints) == expected_taints(group)
        values = next(r for r in plan.of_type(RELEASE) if r.inputs["chart"] == "gpu-operator").inputs["values"]
        nfd = values["node-feature-discovery"]
        assert nfd["master"]["enableTaints"] is True

        def tolerated(tolerations, taint):
            return any(t["operator"] == "Exists" and t.get("key") in (None, taint[0]) and t.get("effect") in (None, taint[2])
                       for t in tolerations)

        every = set().union(*(expected_taints(g) for g in settings.cluster.node_groups))
        assert all(tolerated(nfd["worker"]["tolerations"], t) for t in every)
        # The operator's own daemonsets run on GPU nodes, whatever their taints.
        assert all(tolerated(values["daemonsets"]["tolerations"], t) for g in settings.gpu_groups for t in expected_taints(g))


# --------------------------------------------------------------------------- everyday edits


def _edited_plan(tmp_path: Path, stack: str, edit):
    raw = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    edit(raw["config"]["inference-platform:cluster"]["nodeGroups"])
    stack_file = tmp_path / f"Pulumi.{stack}.yaml"
    stack_file.write_text(yaml.safe_dump(raw, sort_keys=False))
    return render_stack(stack, stack_file).to_json()


@pytest.mark.parametrize("stack,index,sharing", [
    ("demo-dev", 1, {"migProfile": "all-2g.20gb"}),
    ("acme-prod", 2, {"replicas": 8}),
])
def test_a_sharing_change_updates_only_the_groups_rule(tmp_path, stack, index, sharing):
    before = stack_plan(stack).to_json()
    d = diff_plans(before, _edited_plan(tmp_path, stack, lambda groups: groups[index]["gpu"]["sharing"].update(sharing)))
    group = stack_settings(stack).cluster.node_groups[index].name
    contract = [c for c in d["changes"] if f"{CONTRACT}$" in c.key]
    # (On Magnum the cluster's node groups also carry the labels in kubelet_options: cluster.py's business.)
    assert not [e for e in d["errors"] if CONTRACT in e], d["errors"]
    assert [(c.action, c.key.rsplit("::", 1)[-1]) for c in contract] == [("update", f"{stack}-gpu-contract-rule-{group}")]
    label = MIG_CONFIG_LABEL if "migProfile" in sharing else DEVICE_PLUGIN_CONFIG_LABEL
    assert contract[0].paths == [f"inputs.spec.rules[0].labels.{label}"]
    if stack == "demo-dev":  # an existing cluster: nothing else changes but a tuning run on the group's new slices
        others = {c.key.rsplit("::", 1)[-1]: c.action for c in d["changes"] if c not in contract}
        assert others == {"resnet-v2-tune": "replace", "resnet-v2-tuning": "replace"} and not d["errors"]


# --------------------------------------------------------------------------- placement and ordering


def _ensembles(settings: Settings) -> list:
    """The TritonService settings of the stack's ensemble graphs."""
    from inference_platform.settings.graphs import graph_workload

    return [graph_workload(g) for g in settings.graphs if g.placement == "ensemble"]


def _pod_group(settings: Settings, r) -> Optional[NodeGroup]:
    """The group a platform pod runs on: a cold-start object's, or a Triton version's."""
    for role in ("-placeholder-", "-prepull-"):
        if role in r.name:
            return settings.node_group(r.name.split(role, 1)[1])
    labels = r.inputs["metadata"].get("labels") or {}
    for svc in [*settings.services, *_ensembles(settings)]:
        for v in svc.versions:
            if (labels.get("app"), labels.get("version")) == (svc.name, v.name):
                return settings.node_group(v.gpu.group)
            if labels.get(tuning.TUNING_LABEL) == tuning.run_label(svc, v):
                return settings.node_group(v.gpu.group)
    return None


@pytest.mark.parametrize("stack", STACKS)
def test_pods_select_their_group_by_its_selector(stack):
    settings, plan = stack_settings(stack), stack_plan(stack)
    marker_urns = {m.urn for m in markers(plan)}
    placed = 0
    for r in plan.resources:
        if not is_k8s_object(r) or "template" not in r.inputs.get("spec", {}) or r.urn in marker_urns:
            continue
        selector = r.inputs["spec"]["template"]["spec"].get("nodeSelector")
        group = _pod_group(settings, r)
        if group is None:
            # Only the cluster autoscaler picks its nodes otherwise (the control plane).
            assert selector is None or set(selector) == {"node-role.kubernetes.io/control-plane"}, r.name
            continue
        assert selector == group.selector and GROUP_LABEL not in selector, r.name
        placed += 1
    versions = sum(len(s.versions) for s in [*settings.services, *_ensembles(settings)])
    versions += sum(v.tuning is not None for s in settings.services for v in s.versions)  # their tuning runs
    assert placed == versions + len(settings.cold_start.spare_slots) + len(settings.gpu_groups)


def test_rules_come_after_the_release_that_installs_their_crd():
    plan = stack_plan("acme-prod")
    release = plan.get(RELEASE, "acme-prod-gpu-release")
    for r in plan.of_type(RULE):
        assert release.urn in r.depends_on, r.name
    for m in markers(plan):
        # A marker needs only its namespace: it writes a file, whenever NFD comes.
        assert release.urn not in m.depends_on and m.custom_timeouts, m.name


def test_the_pci_taint_rule_only_on_magnum_clusters():
    def pci_rules(plan):
        return [s for s in rule_specs(plan) if any(t["feature"] == "pci.device" for r in s["rules"] for t in r["matchFeatures"])]

    assert pci_rules(render_raw(base_config())) == []
    assert pci_rules(stack_plan("demo-dev")) == []
    raw = as_magnum(base_config())
    raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    (spec,) = pci_rules(render_raw(raw))
    # Any NVIDIA display or 3D controller, and nothing else.
    assert apply_rules([spec], {"pci.device": [NVIDIA_GPU]}) == ({}, [GPU_TAINT])
    assert apply_rules([spec], {"pci.device": [{**NVIDIA_GPU, "class": "0300"}]}) == ({}, [GPU_TAINT])
    assert apply_rules([spec], {"pci.device": [NIC, {**NVIDIA_GPU, "class": "0680"}]}) == ({}, [])
    assert len(pci_rules(stack_plan("acme-prod"))) == 1


def test_a_magnum_capi_helm_cluster_keeps_its_own_gpu_operator_and_nfd_and_gets_only_the_node_rules():
    # capi-helm-charts' addons run the operator (release nvidia-gpu-operator in gpu-operator) and
    # NFD already; a second release, or our own gpu-operator Namespace, would clash with them.
    raw = as_magnum(base_config())
    raw["cluster"]["magnum"] = {"clusterApiDriver": "magnum-capi-helm"}
    raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    plan = render_raw(raw)
    assert plan.of_type(RELEASE) == [r for r in plan.of_type(RELEASE) if r.inputs.get("chart") != "gpu-operator"]
    assert not [r for r in plan.resources if r.type == "kubernetes:core/v1:Namespace"
                and r.inputs["metadata"]["name"] == "gpu-operator"]
    rules = plan.of_type(RULE)
    assert {r.name for r in rules} == {"test-dev-gpu-contract-rule-cpu", "test-dev-gpu-contract-rule-gpu"}
    assert all(r.depends_on == [] or all("gpu-release" not in d for d in r.depends_on) for r in rules)
    assert {m.inputs["metadata"]["namespace"] for m in markers(plan)} == {"gpu-operator"}


# --------------------------------------------------------------------------- without the GPU operator, and bad input


def test_without_the_gpu_operator_there_are_no_rules_or_markers():
    plan = render_raw(base_config() | {"gpuOperator": {"enabled": False}})
    assert plan.of_type(RULE) == [] and markers(plan) == [] and plan.of_type(CONTRACT) == []


def test_a_magnum_cluster_with_gpu_groups_needs_the_gpu_operator():
    raw = as_magnum(base_config()) | {"gpuOperator": {"enabled": False}}
    raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert err.value.paths == ["inference-platform:gpuOperator.enabled"]
    assert "gpu" in str(err.value) and "Node Feature Discovery" in str(err.value) and "allowed: true" in str(err.value)
    assert "\n" not in str(err.value)
    # Without GPU groups, labels or taints there is nothing to apply.
    raw["cluster"]["nodeGroups"] = raw["cluster"]["nodeGroups"][:1]
    raw["services"] = []
    parse(raw)


G = "inference-platform:cluster.nodeGroups"


@pytest.mark.parametrize("magnum,group,path,words", [
    (False, {"labels": {"team": "ml"}}, f"{G}[gpu].labels.team", ["has no prefix", "example.com/team"]),
    (False, {"labels": {"node.kubernetes.io/pool": "a"}}, f"{G}[gpu].labels.node.kubernetes.io/pool", ["kubernetes.io"]),
    (False, {"labels": {GROUP_LABEL: "x"}}, f"{G}[gpu].labels.{GROUP_LABEL}", ["set by the platform"]),
    (False, {"selector": {"example.com/pool": "gpu"}, "labels": {"example.com/pool": "gpu2"}}, f"{G}[gpu].labels.example.com/pool",
     ["selector"]),
    (False, {"taints": [{"key": "dedicated"}]}, f"{G}[gpu].taints[0].key", ["has no prefix"]),
    (False, {"taints": [{"key": "example.com/a"}, {"key": "example.com/a", "value": "b"}]}, f"{G}[gpu].taints[1]",
     ["a second example.com/a taint"]),
    (True, {"taints": [{"key": "nvidia.com/gpu", "value": "h100", "effect": "NoSchedule"}]}, f"{G}[gpu].taints[0].key",
     ["every NVIDIA GPU node is tainted"]),
])
def test_what_nfd_would_drop_or_fight_over_is_refused(magnum, group, path, words):
    raw = base_config()
    raw["cluster"]["nodeGroups"][1] |= group
    if magnum:
        raw = as_magnum(raw)
        raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert err.value.paths == [path]
    for word in words:
        assert word in str(err.value)
    # On an existing cluster without the GPU operator nobody applies them: nothing to check.
    if not magnum:
        parse(raw | {"gpuOperator": {"enabled": False}})
