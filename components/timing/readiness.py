"""How long a workload may legitimately take to become ready, and the waits that follow.

`pulumi up` waits for Kubernetes objects to become ready: a Deployment for 10 minutes
unless its resource options or annotations say otherwise, a Helm release for its
`timeout` input (300 s by default); platformctl/awaits.py records these rules with
their sources. The budgets here come from the cold-start model (coldstart.py): a Triton
replica on a new GPU node passes node boot, driver install, image pull, weight fetch and
model load, and a rolling update brings replicas up one after another. A wait is its
budget with headroom, because the stage times are configured estimates, not
measurements. Pods that stay Pending by design are not awaited at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

import pulumi

from inference_platform.settings.graphs import Graph
from inference_platform.settings.serving import Autoscaling, Service, Version
from inference_platform.settings.stack import Settings
from inference_platform.timing.estimates import GroupEstimate, stack_estimates

# Stage times are estimates: a wait allows a quarter more, rounded up to whole minutes.
HEADROOM = 1.25
# pulumi-kubernetes helm_release.go defaultTimeoutSeconds.
HELM_DEFAULT_TIMEOUT_SECONDS = 300
# A Service's awaiter returns ~10 s after the last Endpoints change (service.go).
ENDPOINTS_SETTLE_SECONDS = 10
# Stages of the new-node path after which a GPU node runs ordinary pods: the kubelet
# pulls one image at a time by default, so a DaemonSet's small image may queue behind
# the driver and Triton images.
NODE_STAGES = ("node boot", "driver install", "image pull")

# Charts whose release waits (helm --wait) include pods on every GPU node, so a GPU node
# that joins during `pulumi up` must boot and pull before the release is ready.
GPU_NODE_DAEMONSET_CHARTS = {
    "gpu-operator": "the node-feature-discovery worker DaemonSet tolerates nvidia.com/gpu",
    "kube-prometheus-stack": "the node-exporter DaemonSet tolerates every NoSchedule taint",
    "alloy": "the Alloy DaemonSet tolerates every taint (logs of every node)",
    "csi-s3": "the node plugin DaemonSet tolerates every node group's taints",
}
# Charts whose release waits for a LoadBalancer Service's address: OpenStack's Octavia
# boots an amphora VM per load balancer, so provisioning takes about a node boot.
LOAD_BALANCER_CHARTS = {"gateway": "the ingress gateway's LoadBalancer Service waits for an address"}


@dataclass(frozen=True)
class Budget:
    """Seconds an object may legitimately need before it is ready, on create and on update."""

    create_seconds: int
    update_seconds: int
    basis: str
    """How the seconds were derived, for the plan's table."""

    @property
    def seconds(self) -> int:
        return max(self.create_seconds, self.update_seconds)


def wait_seconds(budget_seconds: int) -> int:
    """The wait for a budget: with headroom, in whole minutes."""
    return math.ceil(budget_seconds * HEADROOM / 60) * 60


def custom_timeouts(budget: Budget) -> pulumi.CustomTimeouts:
    """customTimeouts for an object with this budget (Go durations, whole minutes)."""
    return pulumi.CustomTimeouts(
        create=f"{wait_seconds(budget.create_seconds) // 60}m",
        update=f"{wait_seconds(budget.update_seconds) // 60}m",
    )


# The estimate walks every version of the stack; every Triton version asks for it, so the
# last stack's estimates are kept (a stack is one frozen Settings object).
_last_estimates: tuple[Optional[Settings], dict[str, GroupEstimate]] = (None, {})


def group_estimates(settings: Settings) -> dict[str, GroupEstimate]:
    global _last_estimates
    if _last_estimates[0] is not settings:
        _last_estimates = (settings, {e.group: e for e in stack_estimates(settings)})
    return _last_estimates[1]


def group_estimate(settings: Settings, group: str) -> GroupEstimate:
    return group_estimates(settings)[group]


def replicas_in_sequence(version: Version, scaling: Autoscaling) -> int:
    """Replicas a rolling update brings up one after another (maxSurge 1, maxUnavailable 0):
    all of them, at the most an HPA may have scaled the version to."""
    return scaling.max_replicas if scaling.enabled else version.replicas


def rollout_budget(estimate: GroupEstimate, replicas: int, termination_grace_seconds: int) -> Budget:
    """A Deployment of `replicas` GPU replicas.

    Create: the replicas start together; each may need a new node (the autoscaler adds
    them at once), so one new-node cold start, after the group's first node has advertised its
    GPUs where the group starts below its maxNodes (the first `up`, gpu/first_up.py). Update:
    the first surge replica may need a new node; each later one starts on the GPU its
    predecessor's old pod frees, after that pod's termination grace, with the node up and the
    image pre-pulled (the spare-slot path).
    """
    if replicas <= 0:
        return Budget(0, 0, "no replicas")
    first = estimate.without_spare_seconds
    create = estimate.first_up_seconds
    later = termination_grace_seconds + estimate.with_spare_seconds
    basis = f"new node {first}s" if create == first else f"first up {create}s ({create - first}s until a GPU node is ready), new node {first}s"
    if replicas > 1:
        basis += f", then {replicas - 1} x (drain {termination_grace_seconds}s + {estimate.with_spare_seconds}s on the freed GPU)"
    return Budget(create, first + (replicas - 1) * later, basis)


def version_rollout_budget(estimate: GroupEstimate, service: Service, version: Version,
                           termination_grace_seconds: int) -> Budget:
    """A Triton version's Deployment, from the cold-start estimate of its GPU group."""
    scaling = version.autoscaling or service.autoscaling
    return rollout_budget(estimate, replicas_in_sequence(version, scaling), termination_grace_seconds)


def ray_upgrade_budget(estimates: Mapping[str, GroupEstimate], graph: Graph) -> Budget:
    """A Ray graph's RayService, awaited until KubeRay reports no upgrade in progress.

    Update: a changed cluster spec starts a whole new RayCluster beside the serving one, so
    its workers need GPU nodes of their own: they start together, and traffic moves once the
    slowest step's worker has passed a new-node cold start. Create: KubeRay reports no upgrade
    as soon as it has read the spec (the cluster comes up after `pulumi up` returns, as before).
    """
    slowest = max(graph.steps, key=lambda s: estimates[s.gpu.group].without_spare_seconds)
    seconds = estimates[slowest.gpu.group].without_spare_seconds
    return Budget(0, seconds, f"new RayCluster: step {slowest.name} on a new {slowest.gpu.group} node {seconds}s")


def ray_upgrade_timeouts(budget: Budget) -> pulumi.CustomTimeouts:
    """customTimeouts for a RayService: the update's wait only (on create the default suffices)."""
    return pulumi.CustomTimeouts(update=f"{wait_seconds(budget.update_seconds) // 60}m")


def service_endpoints_budget(service: Service) -> Budget:
    """A Service with a selector waits until no selected pod is unready: a starting replica
    may be unready for its whole startup budget (the startup probe's limit)."""
    slowest = max(v.startup_budget_seconds for v in service.versions)
    seconds = slowest + ENDPOINTS_SETTLE_SECONDS
    return Budget(seconds, seconds, f"startup budget {slowest}s + endpoints settle {ENDPOINTS_SETTLE_SECONDS}s")


def node_join_budget(estimates: Iterable[GroupEstimate]) -> Optional[Budget]:
    """A release with pods on every GPU node: a GPU node joining meanwhile must boot and
    pull before its DaemonSet pod runs. None without GPU groups."""
    worst: Optional[tuple[int, str]] = None
    for e in estimates:
        stages = [s for s in e.new_node if s.name in NODE_STAGES]
        seconds = sum(s.seconds for s in stages)
        if worst is None or seconds > worst[0]:
            worst = (seconds, f"GPU node joining ({e.group}): " + " + ".join(f"{s.name} {s.seconds}s" for s in stages))
    return Budget(worst[0], worst[0], worst[1]) if worst else None


def gpu_node_join_budget(settings: Settings) -> Optional[Budget]:
    return node_join_budget(group_estimates(settings).values())


def cluster_upgrade_budget(settings: Settings) -> Optional[Budget]:
    """A Magnum cluster's move to a new template (a Kubernetes upgrade): every node is replaced in turn.
    The control plane first, one machine after another; then each group one node after another
    (Cluster API's MachineDeployment default is maxSurge 1 and maxUnavailable 0, v1.13.2
    internal/webhooks/machinedeployment.go; capi-helm-charts' node groups take maxUnavailable 1 and
    maxSurge 0). On magnum-cluster-api the groups go one after another: it moves the Cluster's
    topology version (driver.py upgrade_cluster sets kube_tag and the image on every group), and
    Cluster API's topology controller upgrades one MachineDeployment at a time unless the Cluster's
    topology.cluster.x-k8s.io/upgrade-concurrency annotation says otherwise (exp/topology/scope/scope.go
    New; reconcile_state.go holds every MachineDeployment pending its upgrade), which the driver does
    not set. magnum-capi-helm renders every MachineDeployment at the new version in one Helm
    upgrade, so its groups roll together. A GPU node's drain waits for the replica it evicts to start
    elsewhere (the version's PDB), so a GPU node takes a replica's cold start on a new node; any other
    node its boot. None without Magnum."""
    if settings.cluster.mode != "magnum":
        return None
    boot = settings.cold_start.stage_seconds.node_boot
    estimates = group_estimates(settings)
    control_plane = settings.cluster.magnum.master_count * boot
    rolls = [(g.max_nodes * (estimates[g.name].without_spare_seconds if g.name in estimates else boot), g.name)
             for g in settings.cluster.node_groups]
    head = f"control plane {settings.cluster.magnum.master_count} x {boot}s, then"
    if settings.cluster.magnum.node_labeller == "magnum-cluster-api":
        groups = sum(seconds for seconds, _ in rolls)
        return Budget(0, control_plane + groups, f"{head} the groups one after another ("
                      + " + ".join(f"{name} {seconds}s" for seconds, name in rolls) + "), each one node after another")
    slowest, group = max(rolls)
    return Budget(0, control_plane + slowest, f"{head} the slowest group ({group}) {slowest}s, one node after another")


def load_balancer_budget(node_boot_seconds: int) -> Budget:
    return Budget(node_boot_seconds, node_boot_seconds, f"load balancer: an amphora VM boot ~ node boot {node_boot_seconds}s")


def chart_budget(chart: str, values: Optional[dict], estimates: Iterable[GroupEstimate],
                 node_boot_seconds: Optional[int] = None) -> Optional[Budget]:
    """What a Helm release of `chart` may need beyond its own pods starting, or None
    (`node_boot_seconds` matters to charts with a load balancer only)."""
    budgets = []
    if chart in GPU_NODE_DAEMONSET_CHARTS:
        budgets.append(node_join_budget(estimates))
    if (chart in LOAD_BALANCER_CHARTS and node_boot_seconds is not None
            and ((values or {}).get("service") or {}).get("type") == "LoadBalancer"):
        budgets.append(load_balancer_budget(node_boot_seconds))
    budgets = [b for b in budgets if b is not None]
    return max(budgets, key=lambda b: b.seconds) if budgets else None


def release_budget(settings: Settings, chart: str, values: Optional[dict] = None) -> Optional[Budget]:
    return chart_budget(chart, values, group_estimates(settings).values(), settings.cold_start.stage_seconds.node_boot)


def chart_timeout(chart: str, values: Optional[dict], estimates: Iterable[GroupEstimate],
                  node_boot_seconds: Optional[int] = None) -> Optional[int]:
    """The `timeout` input a release of `chart` needs, or None where Helm's default suffices
    (left unset, so stacks that need nothing more see no change)."""
    budget = chart_budget(chart, values, estimates, node_boot_seconds)
    if budget is None:
        return None
    wait = wait_seconds(budget.seconds)
    return wait if wait > HELM_DEFAULT_TIMEOUT_SECONDS else None


def release_timeout(settings: Settings, chart: str, values: Optional[dict] = None) -> Optional[int]:
    return chart_timeout(chart, values, group_estimates(settings).values(), settings.cold_start.stage_seconds.node_boot)
