"""The GPU node contract and the Node Feature Discovery (NFD) objects that apply it.

Every node of a group carries the group's labels (`node_labels`: the group, and on GPU
groups the GPU model and the MIG or device-plugin config the GPU operator applies) and
taints (`node_taints`: the group's own, plus `nvidia.com/gpu=present:NoSchedule` on GPU
groups). NFD, which the GPU operator's chart installs, puts them on the nodes the same
way for every Magnum driver and for existing clusters:

- A NodeFeatureRule cannot match node labels (its features are cpu, kernel, pci, usb,
  system, local and rule.matched), so a marker DaemonSet per group, selecting the
  group's nodes by `group.selector`, writes the group's name into a feature file in
  the host's features.d directory; nfd-worker reads it as the `local.feature`
  `inference-platform/node-group`.
- One NodeFeatureRule per group matches that feature and sets the group's labels and
  taints.
- On a Magnum cluster one more rule taints every node with an NVIDIA GPU (PCI vendor
  10de, display or 3D controller) at nfd-worker's first discovery, before the marker
  has run. Not on existing clusters, where other people's GPU nodes may exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.core import hardening, versions
from inference_platform.core.common import COMPONENT_KEY, deny_all_traffic_spec, resource_opts, standard_labels
from inference_platform.core.node_contract import (
    GPU_TAINT,
    GROUP_LABEL,
)
from inference_platform.gpu.node_labels import node_labels, node_taints
from inference_platform.settings.cluster import NodeGroup

NFD_API_VERSION = "nfd.k8s-sigs.io/v1alpha1"
# nfd-worker's local feature source (source/local/local.go, NFD v0.19.0); the chart of
# gpu-operator v26.7.0 mounts it from the host (node-feature-discovery templates/worker.yaml).
FEATURES_DIR = "/etc/kubernetes/node-feature-discovery/features.d"
# One file per node: a node moved to another group (existing clusters) gets it overwritten.
FEATURE_FILE = "inference-platform-node-group"
GROUP_FEATURE = GROUP_LABEL
# pci.device attributes as nfd-worker reads them from sysfs (class without its programming interface).
NVIDIA_PCI_VENDOR = "10de"
GPU_PCI_CLASSES = ("0300", "0302")
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "value": "", "effect": "NoSchedule"}
MARKER_COMPONENT = "node-group-marker"
MARKER_RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "10m", "memory": "16Mi"}}


# --------------------------------------------------------------------------- the contract


# --------------------------------------------------------------------------- NFD objects


def _same_taint(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    return (a["key"], a["effect"]) == (b["key"], b["effect"])


def group_rule_spec(group: NodeGroup, magnum: Optional[str] = None) -> dict[str, Any]:
    """NodeFeatureRule spec: on nodes whose marker names the group, its labels and taints."""
    taints = node_taints(group)
    if magnum is not None:
        # The PCI rule already gives GPU nodes this taint. nfd-master records its taints in a node
        # annotation that it parses with ParseTaints, which refuses a repeated key and effect.
        taints = [t for t in taints if not _same_taint(t, GPU_TAINT)]
    rule: dict[str, Any] = {
        "name": f"inference-platform node group {group.name}",
        "labels": node_labels(group, magnum),
        "matchFeatures": [{"feature": "local.feature",
                           "matchExpressions": {GROUP_FEATURE: {"op": "In", "value": [group.name]}}}],
    }
    if taints:
        rule["taints"] = taints
    return {"rules": [rule]}


def gpu_taint_rule_spec() -> dict[str, Any]:
    """NodeFeatureRule spec: the GPU taint on every node with an NVIDIA display or 3D controller."""
    return {"rules": [{
        "name": "inference-platform NVIDIA GPU taint",
        "taints": [dict(GPU_TAINT)],
        "matchFeatures": [{"feature": "pci.device", "matchExpressions": {
            "vendor": {"op": "In", "value": [NVIDIA_PCI_VENDOR]},
            "class": {"op": "In", "value": list(GPU_PCI_CLASSES)},
        }}],
    }]}


def feature_file(group: NodeGroup) -> str:
    """The marker's feature file: the group as a feature only (`# +no-label` keeps nfd-worker
    from also making it a label; the rule sets the labels)."""
    return f"# +no-label\n{GROUP_FEATURE}={group.name}\n"


# Written under a dot name and renamed, as NFD asks: nfd-worker skips dot files and may read
# features.d at any moment. The file stays when the pod goes: a rolling update of the marker
# must not drop the group's labels and taints, even for a moment.
_WRITE = 'printf "%s" "$CONTENT" > "$DIR/.$FILE" && mv -f "$DIR/.$FILE" "$DIR/$FILE"'


def marker_pod(group: NodeGroup) -> dict[str, Any]:
    """Pod spec of a group's marker: an init container writes the feature file, then pause idles."""
    restricted = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}
    return {
        "nodeSelector": dict(group.selector),
        # On every node of the group, whatever its taints, before anything else lands there.
        "tolerations": [{"operator": "Exists"}],
        "priorityClassName": "system-node-critical",
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65535, "seccompProfile": {"type": "RuntimeDefault"}},
        "initContainers": [{
            "name": "write-feature",
            "image": versions.BUSYBOX_IMAGE,
            "command": ["sh", "-c", _WRITE],
            "env": [{"name": "CONTENT", "value": feature_file(group)}, {"name": "DIR", "value": "/features.d"},
                    {"name": "FILE", "value": FEATURE_FILE}],
            "volumeMounts": [{"name": "features-d", "mountPath": "/features.d"}],
            "resources": MARKER_RESOURCES,
            # features.d is root's (0755): root may write there without any capability.
            "securityContext": {**restricted, "runAsNonRoot": False, "runAsUser": 0},
        }],
        "containers": [{"name": "pause", "image": versions.PAUSE_IMAGE, "resources": MARKER_RESOURCES,
                        "securityContext": restricted}],
        "volumes": [{"name": "features-d", "hostPath": {"path": FEATURES_DIR, "type": "DirectoryOrCreate"}}],
    }


def marker_network_policy_spec() -> dict[str, Any]:
    """The markers write a file on the node and idle: no traffic in or out. The policy selects
    the markers only, not the GPU operator's own pods in the same namespace."""
    return deny_all_traffic_spec(MARKER_COMPONENT)


# --------------------------------------------------------------------------- checks


# --------------------------------------------------------------------------- component


@dataclass(frozen=True)
class NodeContractArgs:
    groups: tuple[NodeGroup, ...]
    """The node groups; `selector` singles out each group's nodes."""
    namespace: str
    """Namespace of the marker DaemonSets; its Pod Security level must allow hostPath volumes."""
    crds: Optional[pulumi.Resource]
    """The release that installs NFD and its CRDs (the GPU operator's); None where the cluster runs NFD already (magnum-capi-helm)."""
    magnum_driver: Optional[str] = None
    """The Magnum driver that labels the nodes (`MagnumCluster.node_labeller`); None on an existing cluster."""
    after: tuple[pulumi.Resource, ...] = ()
    """What the markers need first (their namespace)."""
    marker_timeouts: Optional[pulumi.CustomTimeouts] = None
    """How long `pulumi up` waits for a marker DaemonSet (nodes joining meanwhile boot and pull first)."""


class NodeContract(pulumi.ComponentResource):
    """Marker DaemonSets and NodeFeatureRules that give every group's nodes their labels and taints."""

    def __init__(self, name: str, args: NodeContractArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("inference-platform:node_rules:NodeContract", name, None, opts)
        markers = resource_opts(self, depends_on=args.after)
        if args.marker_timeouts is not None:
            markers = pulumi.ResourceOptions.merge(markers, pulumi.ResourceOptions(custom_timeouts=args.marker_timeouts))
        rules = resource_opts(self, depends_on=[args.crds] if args.crds is not None else [])
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-marker-networkpolicy",
            metadata={"name": "node-group-markers-deny-all", "namespace": args.namespace,
                      "labels": standard_labels(MARKER_COMPONENT)},
            spec=marker_network_policy_spec(),
            opts=resource_opts(self, depends_on=args.after),
        )
        self.markers: dict[str, k8s.apps.v1.DaemonSet] = {}
        self.rules: dict[str, k8s.apiextensions.CustomResource] = {}
        for group in args.groups:
            labels = standard_labels(f"node-marker-{group.name}", **{COMPONENT_KEY: MARKER_COMPONENT})
            self.markers[group.name] = k8s.apps.v1.DaemonSet(
                f"{name}-marker-{group.name}",
                metadata={"namespace": args.namespace, "labels": labels,
                          "annotations": hardening.skip_annotations(hardening.NODE_MARKER)},
                spec={"selector": {"matchLabels": labels},
                      "template": {"metadata": {"labels": labels}, "spec": marker_pod(group)}},
                opts=markers,
            )
            self.rules[group.name] = self._rule(f"{name}-rule-{group.name}", group_rule_spec(group, args.magnum_driver), rules)
        # The NFD of a magnum-capi-helm cluster applies no taints (its addon leaves enableTaints off).
        if args.magnum_driver not in (None, "magnum-capi-helm"):
            self.rules["gpu-taint"] = self._rule(f"{name}-gpu-taint", gpu_taint_rule_spec(), rules)
        self.register_outputs({"markers": {g: d.metadata["name"] for g, d in self.markers.items()},
                               "rules": {k: r.metadata["name"] for k, r in self.rules.items()}})

    @staticmethod
    def _rule(logical: str, spec: dict[str, Any], opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
        return k8s.apiextensions.CustomResource(
            logical, api_version=NFD_API_VERSION, kind="NodeFeatureRule",
            metadata={"labels": standard_labels("node-contract")}, spec=spec, opts=opts,
        )
