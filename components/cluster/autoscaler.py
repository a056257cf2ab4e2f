"""Cluster autoscaler for the extra node groups of a Magnum cluster.

The autoscaler Magnum deploys (Heat driver, enable-auto-scaling.sh) sizes only the
default worker group (`--nodes=MIN:MAX:default-worker`), provided its release knows node
groups (1.19 or later; settings/cluster.py refuses an older `autoscaler_tag`, which would take
every node for the default group's). This second one, in
kube-system next to it, manages exactly the NodeGroups the platform adds, found by
the Magnum provider's auto-discovery on their role (cluster.py sets role = group
name) within each group's min_node_count..max_node_count. It reuses the Secrets
Magnum creates for its own autoscaler (trustee credentials and CA bundle) and takes
its own lease and status ConfigMap so the two never contend.

Existing clusters get nothing from here: their own autoscaler must manage their groups.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.core import hardening, versions
from inference_platform.core.common import resource_opts, standard_labels
from inference_platform.core.endpoints import MONITORING_NAMESPACE
from inference_platform.settings.cluster import ClusterSettings, NodeGroup

NAME = "cluster-autoscaler-nodegroups"
NAMESPACE = "kube-system"
# Magnum's autoscaler keeps the upstream defaults for both.
MAGNUM_LEASE = "cluster-autoscaler"
MAGNUM_STATUS_CONFIG_MAP = "cluster-autoscaler-status"
LEASE = NAME
STATUS_CONFIG_MAP = f"{NAME}-status"
# Created in kube-system by enable-auto-scaling.sh; the cloud config names
# ca-file=/etc/kubernetes/ca-bundle.crt.
CLOUD_CONFIG_SECRET = "cluster-autoscaler-cloud-config"
CA_BUNDLE_SECRET = "ca-bundle"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
METRICS_PORT = 8085
# The image is distroless/static:nonroot.
NON_ROOT_UID = 65532

# What cluster-autoscaler 1.34 reads and writes: Magnum's fragment and the upstream
# chart's ClusterRole for that release, with the lease and status ConfigMap renamed.
# Leader election uses leases only (--leader-elect-resource-lock defaults to leases).
_READ = ["get", "list", "watch"]
RULES: list[dict[str, Any]] = [
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [LEASE],
     "verbs": ["get", "update"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "update"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["update"]},
    {"apiGroups": [""], "resources": ["namespaces", "pods", "services", "replicationcontrollers",
                                      "persistentvolumeclaims", "persistentvolumes"], "verbs": _READ},
    {"apiGroups": ["apps"], "resources": ["daemonsets", "replicasets", "statefulsets"], "verbs": _READ},
    {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": _READ},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list", "watch"]},
    {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses", "csinodes", "csidrivers",
                                                    "csistoragecapacities", "volumeattachments"], "verbs": _READ},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [STATUS_CONFIG_MAP],
     "verbs": ["get", "update", "delete"]},
]


def deployed(c: ClusterSettings) -> bool:
    """Heat clusters only: Magnum's autoscaler there sizes the default group, this one the
    others. The Cluster API drivers autoscale every group themselves."""
    return c.magnum_labeller == "heat" and len(c.node_groups) > 1


def pod_monitor_spec() -> dict[str, Any]:
    """Prometheus scrapes this autoscaler's /metrics (scale-ups, unschedulable pods, node
    group sizes); the selector leaves Magnum's own autoscaler out."""
    return {
        "namespaceSelector": {"matchNames": [NAMESPACE]},
        "selector": {"matchLabels": {k: v for k, v in standard_labels(NAME).items() if k != "app.kubernetes.io/managed-by"}},
        "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}],
    }


def network_policy_spec(monitoring_namespace: str = MONITORING_NAMESPACE) -> dict[str, Any]:
    """Only Prometheus may reach this autoscaler (its metrics port); it selects this
    autoscaler's pods, not Magnum's autoscaler or anything else in kube-system. Egress
    stays open: the autoscaler calls the API server and the OpenStack APIs (Keystone,
    Magnum, Heat) at addresses the platform does not know."""
    return {
        "podSelector": {"matchLabels": dict(standard_labels(NAME))},
        "policyTypes": ["Ingress"],
        "ingress": [{
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": monitoring_namespace}}}],
            "ports": [{"protocol": "TCP", "port": METRICS_PORT}],
        }],
    }


def discovery_spec(groups: Sequence[NodeGroup]) -> str:
    """`--node-group-auto-discovery` value selecting the groups by role (magnum:role=<r1>,<r2>)."""
    return "magnum:role=" + ",".join(g.name for g in groups)


# cluster-autoscaler's own default --max-node-provision-time.
DEFAULT_PROVISION_SECONDS = 15 * 60


def max_node_provision_time(gpu_node_ready_seconds: int) -> str:
    """How long the autoscaler waits for a new node to become ready before it gives up on
    it. A GPU node counts as ready only once the driver advertises its GPUs, so the wait
    covers boot and driver install with half again as margin, never below the default."""
    seconds = max(DEFAULT_PROVISION_SECONDS, gpu_node_ready_seconds * 3 // 2)
    return f"{-(-seconds // 60)}m"


def autoscaler_args(groups: Sequence[NodeGroup], cluster_id: pulumi.Input[str],
                    gpu_node_ready_seconds: int = 0) -> list[pulumi.Input[str]]:
    """The autoscaler's flags (cluster-autoscaler 1.34 FAQ, "What are the parameters to CA?")."""
    return [
        "--cloud-provider=magnum",
        pulumi.Output.concat("--cluster-name=", cluster_id),
        "--cloud-config=/config/cloud-config",
        f"--node-group-auto-discovery={discovery_spec(groups)}",
        f"--leader-elect-resource-name={LEASE}",
        f"--status-config-map-name={STATUS_CONFIG_MAP}",
        # Every GPU workload selects its group by node label, so the expander only breaks
        # ties between groups that all fit; least-waste then takes the node the pods fill
        # best. `priority` would read the fixed-name ConfigMap
        # cluster-autoscaler-priority-expander in kube-system, shared with Magnum's autoscaler.
        "--expander=least-waste",
        # Magnum's own timings, so both autoscalers behave alike.
        "--scale-down-unneeded-time=10m",
        "--scale-down-delay-after-add=10m",
        "--scale-down-delay-after-failure=3m",
        # Triton pods mount an emptyDir (/dev/shm); with the default (true) a GPU node
        # serving a model could never be removed.
        "--skip-nodes-with-local-storage=false",
        f"--max-node-provision-time={max_node_provision_time(gpu_node_ready_seconds)}",
        # No --balance-similar-node-groups: the groups differ in GPU model by design.
    ]


def _secret_volume(name: str) -> dict[str, Any]:
    return {"name": name, "secret": {"secretName": name}}


def _pod(groups: Sequence[NodeGroup], cluster_id: pulumi.Input[str], labels: dict[str, str],
         gpu_node_ready_seconds: int) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {
            "serviceAccountName": NAME,
            "priorityClassName": "system-cluster-critical",
            # On the control plane like Magnum's: never on a node it could remove, and no
            # kube-system pod pinning a default-worker node against Magnum's scale-down.
            "nodeSelector": {CONTROL_PLANE: ""},
            "tolerations": [{"key": CONTROL_PLANE, "operator": "Exists", "effect": "NoSchedule"}],
            "securityContext": {"runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "runAsGroup": NON_ROOT_UID,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "cluster-autoscaler",
                "image": versions.CLUSTER_AUTOSCALER_IMAGE,
                "command": ["/cluster-autoscaler"],
                "args": autoscaler_args(groups, cluster_id, gpu_node_ready_seconds),
                "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
                "livenessProbe": {"httpGet": {"path": "/health-check", "port": "metrics"}},
                # /health-check answers 200 until the leader's loop stalls, so a standby replica
                # counts as ready too; the rollout waits until the server listens.
                "readinessProbe": {"httpGet": {"path": "/health-check", "port": "metrics"}},
                "resources": {"requests": {"cpu": "100m", "memory": "300Mi"}, "limits": {"memory": "600Mi"}},
                "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [
                    {"name": CLOUD_CONFIG_SECRET, "mountPath": "/config", "readOnly": True},
                    {"name": CA_BUNDLE_SECRET, "mountPath": "/etc/kubernetes", "readOnly": True},
                ],
            }],
            "volumes": [_secret_volume(CLOUD_CONFIG_SECRET), _secret_volume(CA_BUNDLE_SECRET)],
        },
    }


class NodeGroupAutoscaler(pulumi.ComponentResource):
    """A cluster-autoscaler for the given Magnum NodeGroups, with its RBAC."""

    def __init__(self, name: str, groups: Sequence[NodeGroup], cluster_id: pulumi.Input[str],
                 provider: k8s.Provider, depends_on: Sequence[pulumi.Resource] = (),
                 gpu_node_ready_seconds: int = 0, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("inference-platform:autoscaler:NodeGroupAutoscaler", name, None, opts)
        labels = standard_labels(NAME)
        k8s_opts = resource_opts(self, provider=provider)
        sa = k8s.core.v1.ServiceAccount(
            f"{name}-sa", metadata={"name": NAME, "namespace": NAMESPACE, "labels": labels}, opts=k8s_opts
        )
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role", metadata={"name": NAME, "labels": labels}, rules=RULES, opts=k8s_opts
        )
        binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata={"name": NAME, "labels": labels},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
            subjects=[{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
            opts=resource_opts(self, provider=provider, depends_on=[sa, role]),
        )
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata={"namespace": NAMESPACE, "labels": labels,
                      "annotations": hardening.skip_annotations(hardening.CLUSTER_AUTOSCALER)},
            spec={"replicas": 1, "selector": {"matchLabels": labels}, "template": _pod(groups, cluster_id, labels, gpu_node_ready_seconds)},
            # After the groups exist: discovery finds only what Magnum already has.
            opts=resource_opts(self, provider=provider, depends_on=[sa, binding, *depends_on]),
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-networkpolicy",
            metadata={"name": NAME, "namespace": NAMESPACE, "labels": labels},
            spec=network_policy_spec(),
            opts=k8s_opts,
        )
        self.register_outputs({"deployment": self.deployment.metadata["name"]})
