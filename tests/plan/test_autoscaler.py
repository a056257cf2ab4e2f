"""The cluster autoscaler of the extra Magnum node groups: what it manages, how it
stays apart from Magnum's own autoscaler, its RBAC, and where it is absent."""

from __future__ import annotations

import re

import pytest

from inference_platform.cluster import autoscaler
from inference_platform.core import versions
from inference_platform.gpu.coldstart import PLACEHOLDER_PRIORITY
from inference_platform.settings.cluster import MagnumCluster
from inference_platform.settings.loader import parse_settings
from inference_platform.timing.estimates import gpu_node_ready_seconds
from platformctl.engine import stack_settings
from platformctl.plan import manifest
from policies.rules.security import restricted_problems
from tests.conftest import as_magnum, base_config, on_heat, render_raw, stack_plan
from tests.support import conformance
from tests.support.variants import heat_plan, heat_settings

COMPONENT = "inference-platform:autoscaler:NodeGroupAutoscaler"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
NODE_GROUP = "openstack:containerinfra/nodeGroup:NodeGroup"
# cluster-autoscaler's defaults, which Magnum's autoscaler keeps (enable-auto-scaling.sh).
MAGNUM_LEASE = "cluster-autoscaler"
MAGNUM_STATUS = "cluster-autoscaler-status"
# cluster-autoscaler 1.34 --expendable-pods-priority-cutoff default.
EXPENDABLE_CUTOFF = -10


def parts(plan):
    """The autoscaler component's children, by type."""
    (component,) = plan.of_type(COMPONENT)
    children = plan.children(component)
    return {t: [r for r in children if r.type == t] for t in (DEPLOYMENT, SERVICE_ACCOUNT, CLUSTER_ROLE, BINDING)}


def args_of(deployment) -> list[str]:
    (container,) = deployment.inputs["spec"]["template"]["spec"]["containers"]
    return container["args"]


def flag(args: list[str], name: str) -> list[str]:
    return [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]


def magnum(*groups: dict) -> dict:
    raw = on_heat(as_magnum(base_config()))
    raw["cluster"]["nodeGroups"] = [dict(g, flavor="f1") for g in groups]
    return raw


@pytest.fixture(scope="module")
def prod():
    return parts(heat_plan())


def test_manages_exactly_the_extra_groups(prod):
    settings = heat_settings()
    extra = [g.name for g in settings.cluster.node_groups[1:]]
    assert extra == ["gpu-h100", "gpu-l4"]
    (deployment,) = prod[DEPLOYMENT]
    args = args_of(deployment)
    assert flag(args, "node-group-auto-discovery") == ["magnum:role=gpu-h100,gpu-l4"]
    assert flag(args, "nodes") == []  # the default group stays with Magnum's autoscaler
    assert flag(args, "cloud-provider") == ["magnum"]
    assert flag(args, "cloud-config") == ["/config/cloud-config"]
    # Each discovered role is a NodeGroup's role.
    roles = {ng.inputs["role"] for ng in heat_plan().of_type(NODE_GROUP)}
    assert roles == set(extra)


def test_cluster_name_is_the_magnum_cluster_id(prod):
    node_groups = heat_plan().of_type(NODE_GROUP)
    cluster_ids = {ng.inputs["clusterId"] for ng in node_groups}
    assert len(cluster_ids) == 1
    assert flag(args_of(prod[DEPLOYMENT][0]), "cluster-name") == [cluster_ids.pop()]


def test_lease_and_status_differ_from_magnums(prod):
    args = args_of(prod[DEPLOYMENT][0])
    (lease,) = flag(args, "leader-elect-resource-name")
    (status,) = flag(args, "status-config-map-name")
    assert lease != MAGNUM_LEASE and status != MAGNUM_STATUS
    assert flag(args, "leader-elect") in ([], ["true"])
    rules = prod[CLUSTER_ROLE][0].inputs["rules"]
    named = {(tuple(r["resources"]), tuple(r["resourceNames"])) for r in rules if "resourceNames" in r}
    assert named == {(("leases",), (lease,)), (("configmaps",), (status,))}


def test_expander_and_scale_down(prod):
    args = args_of(prod[DEPLOYMENT][0])
    assert flag(args, "expander") == ["least-waste"]
    assert flag(args, "scale-down-unneeded-time") == ["10m"]
    # Triton pods mount an emptyDir; the default would pin every serving GPU node.
    assert flag(args, "skip-nodes-with-local-storage") == ["false"]
    # Spare-capacity placeholders must still trigger scale-up: not below the cutoff.
    assert flag(args, "expendable-pods-priority-cutoff") == []
    assert PLACEHOLDER_PRIORITY >= EXPENDABLE_CUTOFF


def test_rbac_binds_the_deployments_service_account(prod):
    pod = prod[DEPLOYMENT][0].inputs["spec"]["template"]["spec"]
    (sa,), (role,), (binding,) = prod[SERVICE_ACCOUNT], prod[CLUSTER_ROLE], prod[BINDING]
    assert pod["serviceAccountName"] == sa.inputs["metadata"]["name"]
    assert sa.inputs["metadata"]["namespace"] == "kube-system"
    assert binding.inputs["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.inputs["metadata"]["name"]}
    assert binding.inputs["subjects"] == [
        {"kind": "ServiceAccount", "name": sa.inputs["metadata"]["name"], "namespace": "kube-system"}]
    # Not Magnum's objects (cluster-autoscaler-account / -role / -rolebinding).
    assert not {sa.inputs["metadata"]["name"], role.inputs["metadata"]["name"]} & {
        "cluster-autoscaler-account", "cluster-autoscaler-role"}
    assert {sa.urn, role.urn} <= set(binding.depends_on)


def test_deployment_reuses_magnums_secrets_and_runs_restricted(prod):
    deployment = prod[DEPLOYMENT][0]
    meta = deployment.inputs["metadata"]
    assert meta["namespace"] == "kube-system" and "name" not in meta
    pod = deployment.inputs["spec"]["template"]["spec"]
    assert {v["secret"]["secretName"] for v in pod["volumes"]} == {"cluster-autoscaler-cloud-config", "ca-bundle"}
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    # The cloud config names ca-file=/etc/kubernetes/ca-bundle.crt.
    assert mounts == {"cluster-autoscaler-cloud-config": "/config", "ca-bundle": "/etc/kubernetes"}
    assert pod["containers"][0]["image"] == versions.CLUSTER_AUTOSCALER_IMAGE
    assert restricted_problems(pod) == []
    assert pod["containers"][0]["resources"]["requests"]


def test_deployment_waits_for_the_node_groups(prod):
    node_groups = {ng.urn for ng in heat_plan().of_type(NODE_GROUP)}
    assert node_groups <= set(prod[DEPLOYMENT][0].depends_on)


def test_objects_validate(prod):
    for resources in prod.values():
        for r in resources:
            conformance.validate_core(manifest(r))


def _minor(version: str) -> str:
    return version.lstrip("v").split(".")[1]


def test_image_matches_the_kubernetes_minor():
    tag = versions.CLUSTER_AUTOSCALER_IMAGE.rsplit(":", 1)[1]
    assert re.fullmatch(r"v1\.\d+\.\d+", tag)
    assert _minor(tag) == _minor(MagnumCluster().kubernetes_version)
    assert _minor(tag) == _minor(heat_settings().cluster.magnum.kubernetes_version)


def test_discovery_follows_configuration_order():
    raw = magnum({"name": "cpu"}, {"name": "gpu", "gpu": {"model": "A100-80GB"}}, {"name": "batch", "maxNodes": 3})
    (deployment,) = parts(render_raw(raw))[DEPLOYMENT]
    assert flag(args_of(deployment), "node-group-auto-discovery") == ["magnum:role=gpu,batch"]


def test_none_for_an_existing_cluster():
    plan = stack_plan("demo-dev")
    assert stack_settings("demo-dev").cluster.mode == "existing"
    assert not plan.of_type(COMPONENT)
    assert not [r for r in plan.of_type(CLUSTER_ROLE) if r.inputs["metadata"]["name"] == autoscaler.NAME]


def test_none_for_a_single_magnum_group():
    raw = magnum({"name": "cpu", "maxNodes": 3}) | {"services": []}
    plan = render_raw(raw)
    assert plan.of_type("openstack:containerinfra/cluster:Cluster")
    assert not plan.of_type(COMPONENT)
    assert not plan.of_type(NODE_GROUP)


def test_provision_time_covers_gpu_node_boot_and_driver_install():
    def flag(raw) -> str:
        (deployment,) = [r for r in render_raw(raw).of_type("kubernetes:apps/v1:Deployment") if "autoscaler" in r.name]
        args = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["args"]
        (value,) = [a.split("=", 1)[1] for a in args if a.startswith("--max-node-provision-time=")]
        return value

    two_groups = magnum({"name": "cpu", "maxNodes": 3},
                        {"name": "gpu", "flavor": "g1", "minNodes": 1, "maxNodes": 2, "gpu": {"model": "H100-80GB"}})
    assert flag(two_groups | {"services": []}) == "15m"  # 120 s x 1.5 stays under the default
    # Heat nodes run Fedora CoreOS, whose image brings the driver: the boot alone counts.
    slow = two_groups | {"services": [], "coldStart": {"stageSeconds": {"nodeBoot": 1200, "driverInstall": 300}}}
    assert flag(slow) == "30m"  # 1200 x 1.5
    # Where the operator compiles the driver, install and compile count as well.
    compiled = as_magnum(base_config()) | {
        "gpuOperator": {"driver": {"mode": "compiled", "branch": "595"}},
        "coldStart": {"stageSeconds": {"nodeBoot": 600, "driverInstall": 300, "driverCompile": 300}}}
    compiled["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    seconds = gpu_node_ready_seconds(parse_settings(compiled, "stacks/Pulumi.test-dev.yaml"))
    assert autoscaler.max_node_provision_time(seconds) == "30m"  # (600 + 300 + 300) x 1.5


@pytest.mark.parametrize("plan", [heat_plan, lambda: stack_plan("acme-prod")], ids=["heat", "clusterApi"])
def test_refresh_never_resizes_autoscaled_groups(plan):
    plan = plan()
    for r in plan.of_type(NODE_GROUP):
        assert r.ignore_changes == ["nodeCount"], r.name
    (cluster,) = plan.of_type("openstack:containerinfra/cluster:Cluster")
    # The cluster's labels (the default group's bounds among them) count at creation only: they force a
    # new cluster, and the provider reads the template's labels back into them (test_rehearse.py).
    assert cluster.ignore_changes == ["nodeCount", "labels"]


def test_prometheus_scrapes_the_platform_autoscaler_only():
    plan = heat_plan()
    (monitor,) = [r for r in plan.resources if r.inputs.get("kind") == "PodMonitor" and "cluster-autoscaler" in r.name]
    spec = monitor.inputs["spec"]
    (deployment,) = [r for r in plan.of_type("kubernetes:apps/v1:Deployment") if "autoscaler" in r.name]
    pod = deployment.inputs["spec"]["template"]
    assert spec["namespaceSelector"] == {"matchNames": [deployment.inputs["metadata"]["namespace"]]}
    assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert spec["selector"]["matchLabels"]["app.kubernetes.io/name"] == autoscaler.NAME  # not Magnum's own
    ports = {p["name"]: p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]}
    assert ports[spec["podMetricsEndpoints"][0]["port"]] == autoscaler.METRICS_PORT
    assert not [r for r in stack_plan("demo-dev").resources if "cluster-autoscaler" in r.name]
