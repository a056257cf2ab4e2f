"""GPU operator values, mig-parted and device-plugin configs, the MIG catalogue checks,
and the GPU scheduling contract of every example stack."""

from __future__ import annotations

import pytest
import yaml

from inference_platform.core import grammar, versions
from inference_platform.core.chart_hardening import hardened
from inference_platform.core.node_contract import GROUP_LABEL
from inference_platform.gpu.node_labels import node_labels, node_taints
from inference_platform.gpu.operator import DEVICE_PLUGIN_CONFIG_MAP, MIG_CONFIG_MAP
from inference_platform.gpu.profiles import MIG_CATALOGUE, capacity_warnings, named_profiles, slots_per_node
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.settings.stack import Settings
from platformctl.engine import stack_settings
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import ROOT, STACKS, as_magnum, base_config, gpu_operator_values_of, render_raw, stack_plan
from tests.support import conformance

STACK_FILE = "stacks/Pulumi.test-dev.yaml"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
RELEASE = "kubernetes:helm.sh/v3:Release"


def parse(raw: dict) -> Settings:
    return parse_settings(raw, STACK_FILE)


def with_groups(*gpu_groups: dict, **top) -> dict:
    """Base config whose GPU groups are replaced; the service stays on the first one."""
    raw = base_config()
    raw["cluster"]["nodeGroups"] = [raw["cluster"]["nodeGroups"][0], *({"selector": {"pool": g["name"]}, "os": "ubuntu-24.04"} | g for g in gpu_groups)]
    raw["services"][0]["versions"][0]["gpu"]["group"] = gpu_groups[0]["name"]
    return raw | top


def mig_group(name: str, profile, model="A100-80GB", strategy="mixed", **extra) -> dict:
    return {"name": name, "maxNodes": 2, "gpu": {"model": model, "sharing": {
        "mode": "mig", "migStrategy": strategy, "migProfile": profile}}, **extra}


def shared_group(name: str, mode: str, replicas: int, rename=False) -> dict:
    return {"name": name, "maxNodes": 2, "gpu": {"model": "L4-24GB", "perNode": 2, "sharing": {
        "mode": mode, "replicas": replicas, "renameByDefault": rename}}}


CUSTOM = with_groups(
    mig_group("mixa", {"1g.10gb": 2, "3g.40gb": 1}),
    mig_group("mixb", "all-1g.20gb", model="H100-80GB"),
    shared_group("ts", "time-slicing", 4),
    shared_group("mps", "mps", 8, rename=True),
    coldStart={"spareSlots": {"mixa": 1, "ts": 2}},
)
CUSTOM["services"][0]["versions"][0]["gpu"]["migProfile"] = "3g.40gb"


# --------------------------------------------------------------------------- Helm values


@pytest.mark.parametrize("driver,expected", [
    ({"mode": "precompiled", "branch": "580"}, {"enabled": True, "usePrecompiled": True, "version": "580"}),
    ({"mode": "compiled", "branch": "595"}, {"enabled": True, "usePrecompiled": False, "version": versions.GPU_DRIVER_VERSION}),
    ({"mode": "preinstalled"}, {"enabled": False}),
])
def test_driver_modes(driver, expected):
    values = gpu_operator_values_of(parse(base_config() | {"gpuOperator": {"driver": driver}}))
    assert values["driver"] == expected
    assert values["toolkit"] == {"enabled": True}
    assert values["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": True}}


def test_compiled_driver_must_match_the_pinned_version():
    with pytest.raises(ConfigError) as err:
        parse(base_config() | {"gpuOperator": {"driver": {"mode": "compiled", "branch": "580"}}})
    assert err.value.paths == ["inference-platform:gpuOperator.driver.branch"]
    assert "set branch 595" in str(err.value)


def test_pinned_driver_version_is_the_charts(reference):
    values = conformance.chart_values("gpu-operator", versions.GPU_OPERATOR.version)
    assert values["driver"]["version"] == versions.GPU_DRIVER_VERSION


def _all_values() -> list:
    cases = [parse(CUSTOM), parse(base_config() | {"gpuOperator": {"dcgmExporter": False, "driver": {"mode": "preinstalled"}}})]
    cases += [stack_settings(s) for s in STACKS]
    return [gpu_operator_values_of(s) for s in cases]


def test_values_keys_exist_in_the_pinned_chart(reference):
    # The node-feature-discovery subchart's keys are in its own values.yaml (vendored with the chart).
    defaults = conformance.vendored_chart_values("gpu-operator", versions.GPU_OPERATOR.version)
    # A nodeSelector takes any label; the chart's holds one already (kubernetes.io/os).
    free_form = frozenset({"operator.nodeSelector"})
    for values in _all_values():
        assert conformance.unknown_values_keys(values, defaults, free_form) == []
    # The checker itself notices a misspelt key, in the chart and in its subchart.
    assert conformance.unknown_values_keys({"migManager": {"confg": {}}}, defaults) == ["migManager.confg"]
    assert conformance.unknown_values_keys({"node-feature-discovery": {"master": {"enableTaint": True}}}, defaults) == [
        "node-feature-discovery.master.enableTaint"]


def test_release_is_pinned_and_waits_for_its_configs():
    plan = render_raw(CUSTOM)
    release = plan.get(RELEASE, "test-dev-gpu-release")
    chart = versions.GPU_OPERATOR
    assert (release.inputs["chart"], release.inputs["version"]) == (chart.name, chart.version)
    assert release.inputs["repositoryOpts"]["repo"] == chart.repository
    # The component's values over what the chart lets us harden (core/chart_hardening.py).
    assert release.inputs["values"] == hardened(chart.name, gpu_operator_values_of(parse(CUSTOM)))
    config_maps = {r.urn for r in plan.of_type(CONFIG_MAP) if r.name.startswith("test-dev-gpu-")}
    assert len(config_maps) == 2 and config_maps <= set(release.depends_on)


def test_heat_nodes_get_gpus_without_cdi_and_the_other_drivers_keep_the_charts_default():
    # Heat's containerd (1.6) cannot inject CDI devices: legacy mode, nvidia the default runtime.
    heat = stack_settings(ROOT / "tests" / "data" / "Pulumi.acme-prod-heat.yaml")
    assert heat.cluster.magnum_labeller == "heat"
    assert gpu_operator_values_of(heat)["cdi"] == {"enabled": False}
    for stack in STACKS:
        settings = stack_settings(stack)
        if settings.gpu_operator.enabled and settings.cluster.magnum_labeller != "heat":
            assert "cdi" not in gpu_operator_values_of(settings), stack


def test_operator_disabled_renders_no_release():
    plan = render_raw(base_config() | {"gpuOperator": {"enabled": False}})
    assert not plan.of_type("inference-platform:index:GpuOperator")
    assert not [r for r in plan.of_type(RELEASE) if r.inputs.get("chart") == "gpu-operator"]


# --------------------------------------------------------------------------- ConfigMaps


def _config_map(plan, name: str) -> dict:
    return next(r for r in plan.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == name).inputs


def test_mig_parted_config_holds_exactly_the_configured_layouts():
    plan = render_raw(CUSTOM)
    cm = _config_map(plan, MIG_CONFIG_MAP)
    assert cm["metadata"]["namespace"] == "gpu-operator"
    assert list(cm["data"]) == ["config.yaml"]
    assert yaml.safe_load(cm["data"]["config.yaml"]) == {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "custom-mixa": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 2, "3g.40gb": 1}}],
            "all-1g.20gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.20gb": 4}}],
        },
    }
    values = plan.get(RELEASE, "test-dev-gpu-release").inputs["values"]
    assert values["migManager"]["config"] == {"name": MIG_CONFIG_MAP, "create": False, "default": "all-disabled"}
    assert values["mig"] == {"strategy": "mixed"}


def test_device_plugin_config_has_one_key_per_sharing_profile():
    plan = render_raw(CUSTOM)
    data = _config_map(plan, DEVICE_PLUGIN_CONFIG_MAP)["data"]
    assert {k: yaml.safe_load(v) for k, v in data.items()} == {
        "time-slicing-4": {"version": "v1", "sharing": {"timeSlicing": {
            "renameByDefault": False, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}},
        "mps-8-renamed": {"version": "v1", "sharing": {"mps": {
            "renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 8}]}}},
    }
    values = plan.get(RELEASE, "test-dev-gpu-release").inputs["values"]
    assert values["devicePlugin"] == {"config": {"name": DEVICE_PLUGIN_CONFIG_MAP, "create": False}}


def test_named_profiles_only_use_the_operators_discovered_configs():
    plan = stack_plan("demo-dev")
    assert not [r for r in plan.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == MIG_CONFIG_MAP]
    values = plan.get(RELEASE, "demo-dev-gpu-release").inputs["values"]
    assert "config" not in values["migManager"] and values["migManager"]["enabled"] is True


def test_gpu_objects_of_a_custom_layout_validate(reference):
    plan = render_raw(CUSTOM)
    docs = [manifest(r) for r in plan.resources if is_k8s_object(r) and ("-gpu-" in r.name or "-coldstart-" in r.name)]
    assert {d["kind"] for d in docs} >= {"ConfigMap", "Namespace", "Deployment", "DaemonSet", "PriorityClass", "NodeFeatureRule"}
    for doc in docs:
        conformance.validate(doc)


# --------------------------------------------------------------------------- node labels


def test_gpu_nodes_carry_the_config_they_select():
    s = parse(CUSTOM)
    labels = {g.name: node_labels(g) for g in s.cluster.node_groups}
    assert labels["cpu"] == {GROUP_LABEL: "cpu"}
    assert labels["mixa"]["nvidia.com/mig.config"] == "custom-mixa"
    assert labels["mixb"]["nvidia.com/mig.config"] == "all-1g.20gb"
    assert labels["mixb"]["inference-platform/gpu-model"] == "H100-80GB"
    assert labels["ts"]["nvidia.com/device-plugin.config"] == "time-slicing-4"
    assert labels["mps"]["nvidia.com/device-plugin.config"] == "mps-8-renamed"
    assert "nvidia.com/device-plugin.config" not in labels["mixa"]
    for g in s.gpu_groups:
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node_taints(g)
        for k, v in labels[g.name].items():
            grammar.qualified_key(k)
            grammar.label_value(v)


def test_magnum_refuses_a_gpu_default_group():
    raw = as_magnum(base_config())
    raw["cluster"]["nodeGroups"].reverse()
    raw["cluster"]["nodeGroups"][1]["flavor"] = "m1.large"
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert err.value.paths == ["inference-platform:cluster.nodeGroups[gpu].gpu"]
    assert "list a CPU group first" in str(err.value)


# --------------------------------------------------------------------------- MIG catalogue


def test_named_profiles_follow_the_operator_defaults():
    assert named_profiles("A100-40GB")["all-1g.10gb"] == {"1g.10gb": 4}
    assert named_profiles("A100-80GB")["all-1g.10gb"] == {"1g.10gb": 7}
    assert named_profiles("H100-80GB")["all-1g.10gb.me"] == {"1g.10gb+me": 1}
    assert named_profiles("A30-24GB")["all-4g.24gb"] == {"4g.24gb": 1}
    assert named_profiles("H200-141GB")["all-3g.71gb"] == {"3g.71gb": 2}
    # Every all-<profile> fills at most one GPU.
    for gpu in MIG_CATALOGUE.values():
        for p in gpu.profiles.values():
            assert p.compute * p.max_count <= gpu.compute and p.memory * p.max_count <= gpu.memory


G = "inference-platform:cluster.nodeGroups[gpu].gpu.sharing.migProfile"
BAD_MIXES = [
    ("too-many-compute", "A100-80GB", {"3g.40gb": 2, "1g.10gb": 2}, G, ["compute slices", "3g.40gb 3/4"]),
    ("too-much-memory", "A100-40GB", {"3g.20gb": 2, "1g.5gb": 1}, G, ["9 of 8 memory slices"]),
    ("over-max-count", "A100-80GB", {"1g.20gb": 5}, G, ["5 x 1g.20gb exceeds the 4"]),
    ("profile-of-other-model", "A100-80GB", {"1g.5gb": 7}, G, ["A100-80GB has no MIG profile '1g.5gb'", "1g.10gb (max 7)"]),
    ("a30-has-four-slices", "A30-24GB", {"2g.12gb": 2, "1g.6gb": 1}, G, ["5 of 4 compute slices"]),
    ("two-media-engines", "H100-80GB", {"1g.10gb+me": 2}, G, ["2 x 1g.10gb+me exceeds the 1"]),
    ("zero-count", "A100-80GB", {"1g.10gb": 0}, G, ["count of 1 or more"]),
    ("unknown-named", "A100-80GB", "all-1g.5gb", G, ["no MIG config 'all-1g.5gb'", "all-1g.10gb"]),
    ("h200-too-big", "H200-141GB", {"7g.141gb": 1, "1g.18gb": 1}, G, ["8 of 7 compute slices"]),
]


@pytest.mark.parametrize("case,model,profile,path,words", BAD_MIXES, ids=[c[0] for c in BAD_MIXES])
def test_invalid_mig_mix_is_refused(case, model, profile, path, words):
    raw = with_groups(mig_group("gpu", profile, model=model))
    raw["services"][0]["versions"][0]["gpu"]["migProfile"] = "1g.10gb"
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert err.value.paths == [path]
    msg = err.value.problems[0][1]
    assert msg.startswith("group 'gpu': ")
    for word in words:
        assert word in msg


def test_single_strategy_needs_one_profile():
    raw = with_groups(mig_group("gpu", {"1g.10gb": 2, "3g.40gb": 1}, strategy="single"))
    with pytest.raises(ConfigError, match="use migStrategy: mixed") as err:
        parse(raw)
    assert err.value.paths == [G]


def test_valid_mixes_are_accepted():
    for model, mix in [("A100-40GB", {"4g.20gb": 1, "3g.20gb": 1}), ("A100-80GB", {"2g.20gb": 3, "1g.10gb": 1}),
                       ("H100-94GB", {"3g.47gb": 2}), ("A30-24GB", {"2g.12gb": 1, "1g.6gb": 2})]:
        raw = with_groups(mig_group("gpu", mix, model=model))
        raw["services"][0]["versions"][0]["gpu"]["migProfile"] = next(iter(mix))
        parse(raw)


def test_version_slice_must_be_in_its_groups_mix():
    raw = with_groups(mig_group("gpu", {"1g.10gb": 2, "3g.40gb": 1}))
    raw["services"][0]["versions"][0]["gpu"]["migProfile"] = "2g.20gb"
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert err.value.paths == ["inference-platform:services[svc].versions[v1].gpu.migProfile"]
    assert "no 2g.20gb slices" in str(err.value) and "2 x 1g.10gb, 1 x 3g.40gb" in str(err.value)


def test_one_mig_strategy_per_cluster():
    raw = with_groups(mig_group("gpu", "all-1g.10gb", strategy="single"), mig_group("gpu2", "all-3g.40gb"))
    with pytest.raises(ConfigError, match="one MIG strategy") as err:
        parse(raw)
    assert err.value.paths == ["inference-platform:cluster.nodeGroups"]


# --------------------------------------------------------------------------- capacity


def test_minimum_that_cannot_fit_is_a_config_error():
    raw = base_config()
    raw["services"][0]["autoscaling"] = {"minReplicas": 3, "maxReplicas": 3}
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert err.value.paths == ["inference-platform:cluster.nodeGroups[gpu].maxNodes"]
    assert "need 3 x nvidia.com/gpu, but maxNodes 2 offers 2; maxNodes 3 would hold them" in str(err.value)


def test_spare_slots_count_toward_the_minimum():
    raw = base_config() | {"coldStart": {"spareSlots": {"gpu": 2}}}
    with pytest.raises(ConfigError, match="minimum replicas and spare slots need 3"):
        parse(raw)


def test_max_that_cannot_fit_is_a_plan_warning():
    raw = base_config()
    raw["services"][0]["autoscaling"] = {"minReplicas": 1, "maxReplicas": 5}
    assert capacity_warnings(parse(raw)) == [
        "GPU group gpu: services need 5 x nvidia.com/gpu at max replicas, but 2 nodes offer 2; scale-out stops at 2"]
    # Time-slicing multiplies the slots: 2 nodes x 2 GPUs x 4 replicas.
    raw = with_groups(shared_group("ts", "time-slicing", 4))
    raw["services"][0]["autoscaling"] = {"minReplicas": 1, "maxReplicas": 16}
    assert capacity_warnings(parse(raw)) == []


# --------------------------------------------------------------------------- every stack


def _gpu_pods(stack: str):
    """(resource, pod spec) of every rendered workload that requests a GPU resource (a
    RayService's worker groups among them)."""
    for r in stack_plan(stack).resources:
        if not is_k8s_object(r):
            continue
        if r.inputs["kind"] == "RayService":
            pods = [g["template"]["spec"] for g in r.inputs["spec"]["rayClusterConfig"]["workerGroupSpecs"]]
        elif r.inputs["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
            pods = [r.inputs["spec"]["template"]["spec"]]
        else:
            continue
        for pod in pods:
            requests = {k for c in pod["containers"] for k in (c.get("resources") or {}).get("limits", {})}
            gpu = sorted(k for k in requests if k.startswith("nvidia.com/"))
            if gpu:
                yield r, pod, gpu


@pytest.mark.parametrize("stack", STACKS)
def test_every_gpu_workload_matches_its_group(stack):
    settings = stack_settings(stack)
    seen = 0
    for r, pod, resources in _gpu_pods(stack):
        (group,) = [g for g in settings.cluster.node_groups if g.selector == pod["nodeSelector"]]
        assert group.is_gpu, r.name
        taints = node_taints(group)
        assert pod["tolerations"] == [{"operator": "Equal", **t} for t in taints], r.name
        assert len(resources) == 1 and resources[0] in slots_per_node(group), (r.name, resources)
        seen += 1
    # Every version and every placeholder group was checked.
    expected = sum(len(s.versions) for s in settings.services) + sum(1 for n in settings.cold_start.spare_slots.values() if n)
    # An ensemble graph is one Triton Deployment; a graph on Ray has a worker group per step.
    expected += sum(1 if g.placement == "ensemble" else len(g.steps) for g in settings.graphs)
    assert seen == expected
