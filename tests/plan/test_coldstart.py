"""Spare GPU capacity, image pre-pull and the cold-start estimate."""

from __future__ import annotations

import copy

import pytest

from inference_platform.core import versions
from inference_platform.gpu.coldstart import DRIVER_READY_LABEL, PRIORITY_CLASS
from inference_platform.gpu.first_up import first_up_estimates
from inference_platform.settings.loader import parse_settings
from inference_platform.timing.estimates import stack_estimates
from platformctl.plan import manifest
from tests.conftest import as_magnum, base_config, on_heat, render_raw, stack_plan
from tests.plan.test_plan import run_ctl
from tests.support import conformance

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
PRIORITY = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
TRITON = "nvcr.io/nvidia/tritonserver:25.01-py3"
TRITON_LLM = "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3"
# The GPU group's selector in the base config.
GPU_SELECTOR = base_config()["cluster"]["nodeGroups"][1]["selector"]


def two_images() -> dict:
    """Base config with spare slots and three versions using two distinct images."""
    raw = base_config() | {"coldStart": {"spareSlots": {"gpu": 1}}}
    raw["cluster"]["nodeGroups"][1]["maxNodes"] = 4
    svc = raw["services"][0]
    v1 = svc["versions"][0]
    v1["resources"] = {"cpu": "6", "memory": "48Gi"}
    v1["weight"] = 50
    v2 = copy.deepcopy(v1) | {"name": "v2", "image": TRITON_LLM, "weight": 50}
    v3 = copy.deepcopy(v1) | {"name": "v3", "weight": 0}
    svc["versions"] = [v1, v2, v3]
    return raw


def pod(resource) -> dict:
    return resource.inputs["spec"]["template"]["spec"]


def assert_restricted(spec: dict) -> None:
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in spec.get("initContainers", []) + spec["containers"]:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"], c["name"]


def test_priority_class_is_negative_and_never_preempts():
    pc = render_raw(two_images()).get(PRIORITY, "test-dev-coldstart-priority").inputs
    assert pc["value"] < 0 and pc["globalDefault"] is False and pc["preemptionPolicy"] == "Never"
    assert pc["metadata"]["name"] == PRIORITY_CLASS


def test_placeholder_holds_a_real_replicas_slot():
    plan = render_raw(two_images())
    placeholder = plan.get(DEPLOYMENT, "test-dev-coldstart-placeholder-gpu")
    replica = pod(plan.get(DEPLOYMENT, "svc-v1"))
    spec = pod(placeholder)
    assert placeholder.inputs["spec"]["replicas"] == 1
    assert spec["priorityClassName"] == PRIORITY_CLASS
    assert spec["nodeSelector"] == replica["nodeSelector"] == GPU_SELECTOR
    assert spec["tolerations"] == replica["tolerations"]
    (container,) = spec["containers"]
    assert container["image"] == versions.PAUSE_IMAGE
    # Limits equal the requests: a bounded pod, scheduled and preempted exactly like the replica.
    assert container["resources"]["limits"] == container["resources"]["requests"] == {
        "cpu": "6", "memory": "48Gi", "nvidia.com/gpu": "1"}
    assert_restricted(spec)


def test_mixed_mig_placeholder_requests_the_versions_slice():
    raw = base_config() | {"coldStart": {"spareSlots": {"gpu": 2}}}
    raw["cluster"]["nodeGroups"][1]["gpu"]["sharing"] = {"mode": "mig", "migStrategy": "mixed", "migProfile": {"1g.10gb": 4, "3g.40gb": 1}}
    raw["services"][0]["versions"][0]["gpu"]["migProfile"] = "1g.10gb"
    plan = render_raw(raw)
    limits = pod(plan.get(DEPLOYMENT, "test-dev-coldstart-placeholder-gpu"))["containers"][0]["resources"]["limits"]
    assert limits == {"cpu": "4", "memory": "16Gi", "nvidia.com/mig-1g.10gb": "1"}


def test_prepull_pulls_each_image_once_without_a_gpu():
    plan = render_raw(two_images())
    ds = plan.get(DAEMONSET, "test-dev-coldstart-prepull-gpu")
    spec = pod(ds)
    assert [c["image"] for c in spec["initContainers"]] == [TRITON, TRITON_LLM]
    assert all(c["command"] == ["sh", "-c", "exit 0"] for c in spec["initContainers"])
    assert spec["containers"][0]["image"] == versions.PAUSE_IMAGE
    assert spec["nodeSelector"] == GPU_SELECTOR
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in spec["tolerations"]
    for c in spec["initContainers"] + spec["containers"]:
        assert not any(k.startswith("nvidia.com/") for k in c["resources"]["requests"]), c["name"]
        assert c["resources"]["requests"] == {"cpu": "10m", "memory": "16Mi"}
    assert_restricted(spec)


def test_prepull_off_and_no_spare_render_nothing_for_the_group():
    raw = base_config() | {"coldStart": {"imagePrePull": False}}
    plan = render_raw(raw)
    assert not plan.of_type(DAEMONSET) or all("prepull" not in r.name for r in plan.of_type(DAEMONSET))
    assert all("placeholder" not in r.name for r in plan.of_type(DEPLOYMENT))


def test_coldstart_objects_validate(reference):
    plan = render_raw(two_images())
    docs = [manifest(r) for r in plan.resources if r.name.startswith("test-dev-coldstart-")]
    # Namespace, PriorityClass, placeholder, pre-pull and the deny-all NetworkPolicy.
    assert len(docs) == 5
    for doc in docs:
        conformance.validate_core(doc)


def test_acme_prod_holds_spare_capacity_on_its_magnum_gpu_group():
    plan = stack_plan("acme-prod")
    placeholder = plan.get(DEPLOYMENT, "acme-prod-coldstart-placeholder-gpu-h100")
    assert placeholder.inputs["spec"]["replicas"] == 1
    assert plan.get("openstack:containerinfra/nodeGroup:NodeGroup", "acme-prod-cluster-gpu-h100").inputs["minNodeCount"] == 1


# --------------------------------------------------------------------------- estimate


def estimate(raw: dict):
    (e,) = [x for x in stack_estimates(parse_settings(raw, "stacks/Pulumi.test-dev.yaml")) if x.group == "gpu"]
    return e, {s.name: s.seconds for s in e.new_node}, {s.name: s.seconds for s in e.spare}


def test_estimate_with_pre_pull_and_precompiled_drivers():
    e, new, spare = estimate(two_images())
    # Defaults: boot 120, driver 180, pull 360 (after the driver: one image at a time), load 420.
    assert new == {"node boot": 120, "driver install": 180, "image pull": 360, "weight fetch": 0, "model load": 420}
    assert e.without_spare_seconds == 1080
    assert spare == {"preempt spare": 0, "node boot": 0, "driver install": 0, "image pull": 0, "weight fetch": 0, "model load": 420}
    assert e.with_spare_seconds == 420 and e.spare_slots == 1


def test_estimate_follows_the_settings():
    raw = two_images() | {
        "gpuOperator": {"driver": {"mode": "compiled", "branch": "595"}},
        "coldStart": {"imagePrePull": False, "stageSeconds": {"imagePull": 150, "nodeBoot": 90, "driverCompile": 240}},
    }
    raw["services"][0]["versions"][1] |= {"modelLoadSeconds": 600}
    e, new, spare = estimate(raw)
    assert new["driver install"] == 180 + 240
    assert new["image pull"] == 150 and new["node boot"] == 90 and new["model load"] == 600
    assert spare["image pull"] == 150
    assert e.spare_slots == 0
    e, new, _ = estimate(base_config() | {"gpuOperator": {"driver": {"mode": "preinstalled"}}})
    assert new["driver install"] == 0 and new["image pull"] == 360


def test_estimate_counts_the_s3_download_only_for_groups_reading_from_s3():
    raw = base_config() | {
        "weightCaches": base_config()["weightCaches"] | {"s3": {"endpoint": "https://s3.example.com", "bucket": "weights"}},
        "s3AccessKeyId": "id", "s3SecretAccessKey": "key",
    }
    settings = parse_settings(raw, "stacks/Pulumi.test-dev.yaml", frozenset({"s3AccessKeyId", "s3SecretAccessKey"}))
    (file_share,) = stack_estimates(settings)
    raw["services"][0]["versions"][0]["modelRepository"]["cache"] = "s3"
    raw["coldStart"] = {"stageSeconds": {"weightFetch": 333}}
    settings = parse_settings(raw, "stacks/Pulumi.test-dev.yaml", frozenset({"s3AccessKeyId", "s3SecretAccessKey"}))
    (from_s3,) = stack_estimates(settings)
    fetch = {e: {s.name: s.seconds for s in stages}["weight fetch"]
             for e, stages in (("share new", file_share.new_node), ("share spare", file_share.spare),
                               ("s3 new", from_s3.new_node), ("s3 spare", from_s3.spare))}
    # Triton copies an s3:// repository to local disk at every start, spare slot or not.
    assert fetch == {"share new": 0, "share spare": 0, "s3 new": 333, "s3 spare": 333}
    assert from_s3.without_spare_seconds == file_share.without_spare_seconds + 333


@pytest.mark.parametrize("stack,expected", [("acme-prod", "gpu-h100:"), ("demo-dev", "gpu-a100:")])
def test_plan_prints_the_estimate_per_gpu_group(stack, expected, tmp_path):
    result = run_ctl("plan", stack, "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "estimate from configured stage times" in result.stdout
    assert expected in result.stdout
    assert "spare slot: 420s" in result.stdout


# --------------------------------------------------------------------------- the first `up`


def three_replicas(min_nodes: int, initial_nodes: int | None = None) -> dict:
    """A Magnum stack whose one GPU version runs at least 3 replicas, one whole GPU each, on a group of 1-GPU nodes."""
    raw = as_magnum(base_config())
    group = raw["cluster"]["nodeGroups"][1]
    group |= {"flavor": "g1.a100.1", "minNodes": min_nodes, "maxNodes": 4}
    if initial_nodes is not None:
        group["initialNodes"] = initial_nodes
    raw["services"][0]["autoscaling"] = {"minReplicas": 3, "maxReplicas": 4}
    return raw


def first_up(raw: dict):
    e = first_up_estimates(parse_settings(raw, "stacks/Pulumi.test-dev.yaml"))["gpu"]
    return e, [(s.name, s.seconds) for s in e.first_up_path]


def test_a_group_that_starts_too_small_waits_for_a_gpu_node_before_it_grows():
    e, path = first_up(three_replicas(min_nodes=1))
    # 1 node of at most 4 for 3 replicas: the autoscaler adds nodes only once the first has booted and
    # installed its driver.
    new_node = [(s.name, s.seconds) for s in e.new_node]
    assert path == [("first node GPU-ready", 120 + 180), *new_node]
    assert e.first_up_seconds == 300 + e.without_spare_seconds
    assert "starts with 1 node" in e.start and "need 3" in e.start
    # A group that starts at its maxNodes never grows.
    roomy, path = first_up(three_replicas(min_nodes=4))
    assert path == new_node and roomy.first_up_seconds == roomy.without_spare_seconds


def test_adding_or_removing_a_version_leaves_the_other_versions_waits_alone():
    one = three_replicas(min_nodes=1)
    one["services"][0]["autoscaling"] = {"minReplicas": 1, "maxReplicas": 2}
    two = copy.deepcopy(one)
    two["services"][0]["versions"][0]["weight"] = 90
    two["services"][0]["versions"].append(copy.deepcopy(one["services"][0]["versions"][0]) | {"name": "v2", "weight": 10})
    # 1 replica fits the starting node, 2 do not: the create wait does not follow.
    (before,), (after,) = ([r for r in render_raw(raw).of_type(DEPLOYMENT) if r.name == "svc-v1"] for raw in (one, two))
    assert before.custom_timeouts == after.custom_timeouts
    assert before.inputs["spec"]["progressDeadlineSeconds"] == after.inputs["spec"]["progressDeadlineSeconds"]


def test_the_first_up_lengthens_only_the_create_wait():
    def timeouts(raw):
        return render_raw(raw).get(DEPLOYMENT, "svc-v1").custom_timeouts

    small, roomy = timeouts(three_replicas(min_nodes=1)), timeouts(three_replicas(min_nodes=4))
    assert small["update"] == roomy["update"]
    assert int(small["create"].rstrip("m")) > int(roomy["create"].rstrip("m"))


@pytest.mark.parametrize("driver,starts_with", [
    ({"clusterApiDriver": "magnum-cluster-api"}, 1),
    ({"clusterApiDriver": "magnum-capi-helm"}, 1),
    ("heat", 4),
])
def test_cluster_api_starts_an_autoscaled_group_at_min_nodes_and_heat_at_initial_nodes(driver, starts_with):
    # The settings refuse an initialNodes above minNodes on the Cluster API drivers (test_config).
    raw = three_replicas(min_nodes=1, initial_nodes=4 if driver == "heat" else None)
    if driver == "heat":
        on_heat(raw)
    else:
        raw["cluster"]["magnum"] = driver
    e, path = first_up(raw)
    assert f"starts with {starts_with} node" in e.start
    # Heat creates all 4 nodes the group may have; on Cluster API it grows from 1 behind the gate.
    assert (path[0][0] == "first node GPU-ready") == (starts_with < 4)


def test_prepull_waits_for_a_working_driver_where_a_gpu_operator_labels_the_nodes():
    def affinity(raw):
        return pod(render_raw(raw).get(DAEMONSET, "test-dev-coldstart-prepull-gpu")).get("affinity")

    terms = affinity(two_images())["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": DRIVER_READY_LABEL, "operator": "Exists"}]}]
    # Without a GPU operator nothing sets the label: the pre-pull runs on every node of the group.
    assert affinity(two_images() | {"gpuOperator": {"enabled": False}}) is None
