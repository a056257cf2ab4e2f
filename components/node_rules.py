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
from typing import Any, Iterable, Mapping, Optional

import pulumi
import pulumi_kubernetes as k8s

from . import hardening, versions
from .common import COMPONENT_KEY, deny_all_traffic_spec, resource_opts, standard_labels
from .config import NodeGroup, Path, Settings
from .node_contract import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_MODEL_LABEL,
    GPU_TAINT,
    GROUP_LABEL,
    MAGNUM_GPU_LABEL,
    MIG_CONFIG_LABEL,
)

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


def mig_config_name(group: NodeGroup) -> str:
    """Value of the group's `nvidia.com/mig.config` label: the mig-parted config it applies."""
    profile = group.gpu.sharing.mig_profile
    return profile if isinstance(profile, str) else f"custom-{group.name}"


def device_plugin_config_name(group: NodeGroup) -> str:
    """Value of the group's `nvidia.com/device-plugin.config` label (time-slicing / MPS)."""
    s = group.gpu.sharing
    return f"{s.mode}-{s.replicas}" + ("-renamed" if s.rename_by_default else "")


def sharing_labels(group: NodeGroup) -> dict[str, str]:
    """Node labels that select the group's MIG layout or device-plugin sharing config."""
    if group.gpu is None:
        return {}
    mode = group.gpu.sharing.mode
    if mode == "mig":
        return {MIG_CONFIG_LABEL: mig_config_name(group)}
    if mode in ("time-slicing", "mps"):
        return {DEVICE_PLUGIN_CONFIG_LABEL: device_plugin_config_name(group)}
    return {}


def node_labels(group: NodeGroup, magnum_driver: Optional[str] = None) -> dict[str, str]:
    """Labels every node of the group carries; `magnum_driver` is the Magnum driver that
    labels the cluster's nodes (`MagnumCluster.node_labeller`), None on an existing cluster."""
    labels = {GROUP_LABEL: group.name, **group.labels}
    if group.gpu is not None:
        labels[GPU_MODEL_LABEL] = group.gpu.model
        labels.update(sharing_labels(group))
    if magnum_driver == "heat" and group.advertises_whole_gpus:
        # Our cluster-autoscaler (Magnum provider, Heat clusters) counts a node with this label
        # as not ready until it advertises nvidia.com/gpu, so it adds no second node while the
        # driver installs. Nodes that advertise MIG slices or renamed shares never do, and would
        # count as unready for ever: they go without it.
        labels[MAGNUM_GPU_LABEL] = "true"
    return labels


def node_taints(group: NodeGroup) -> list[dict[str, str]]:
    """Taints of the group's nodes: the configured ones, plus the GPU taint on GPU groups."""
    taints = [t.model_dump() for t in group.taints]
    if group.gpu is not None and not any(t["key"] == GPU_TAINT["key"] for t in taints):
        taints.append(dict(GPU_TAINT))
    return taints


def tolerations(taints: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """One toleration per (key, effect) of the taints, of any value, in a stable order."""
    seen = {(t["key"], t["effect"]) for t in taints}
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in sorted(seen)]


def group_taints(groups: Iterable[NodeGroup]) -> list[dict[str, str]]:
    """Every taint the groups' nodes carry."""
    return [t for g in groups for t in node_taints(g)]


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


def _nfd_key_problem(key: str) -> Optional[str]:
    # nfd-master drops labels and taints whose key has no prefix or a kubernetes.io prefix
    # (pkg/apis/nfd/validate/validate.go, NFD v0.19.0).
    prefix = key.rpartition("/")[0]
    if not prefix:
        return "has no prefix"
    if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        return "is in a kubernetes.io namespace"
    return None


def contract_problems(settings: Settings) -> list[tuple[Path, str]]:
    """What keeps NFD from giving the groups' nodes their labels and taints."""
    groups = settings.cluster.node_groups
    magnum = settings.cluster.magnum_labeller
    if not settings.gpu_operator.enabled:
        needy = [g.name for g in groups if g.is_gpu or g.labels or g.taints]
        if magnum is None or not needy:
            return []
        return [(("gpuOperator", "enabled"), "false leaves the nodes of Magnum groups " + ", ".join(needy)
                 + " without their labels and taints (Node Feature Discovery, which applies them, comes with the "
                 "GPU operator); allowed: true, or no GPU groups and no node labels or taints")]
    contract = {GROUP_LABEL, GPU_MODEL_LABEL, MIG_CONFIG_LABEL, DEVICE_PLUGIN_CONFIG_LABEL, MAGNUM_GPU_LABEL}
    problems: list[tuple[Path, str]] = []
    for i, g in enumerate(groups):
        base: Path = ("cluster", "nodeGroups", i)
        for key in g.labels:
            problem = _nfd_key_problem(key)
            if problem:
                problem = f"{problem}, which Node Feature Discovery refuses; use your own prefix (example.com/{key.rpartition('/')[2]})"
            elif key in contract:
                problem = "is set by the platform; choose another key"
            elif key in g.selector:
                problem = "is in the group's selector, whose labels belong to whoever puts the nodes in the group"
            if problem:
                problems.append((base + ("labels", key), f"label key {key!r} {problem}"))
        seen: set[tuple[str, str]] = set()
        for ti, t in enumerate(g.taints):
            path = base + ("taints", ti)
            problem = _nfd_key_problem(t.key)
            if problem:
                problems.append((path + ("key",), f"taint key {t.key!r} {problem}, which Node Feature Discovery "
                                 f"refuses; use your own prefix (example.com/{t.key.rpartition('/')[2]})"))
            if (t.key, t.effect) in seen:
                problems.append((path, f"a second {t.key} taint with effect {t.effect}; a node holds one per key and effect"))
            seen.add((t.key, t.effect))
            if magnum is not None and t.key == GPU_TAINT["key"] and t.model_dump() != GPU_TAINT:
                problems.append((path + ("key",), "on a Magnum cluster every NVIDIA GPU node is tainted "
                                 f"{GPU_TAINT['key']}={GPU_TAINT['value']}:{GPU_TAINT['effect']}; remove this taint"))
    return problems


# --------------------------------------------------------------------------- component


@dataclass(frozen=True)
class NodeContractArgs:
    groups: tuple[NodeGroup, ...]
    """The node groups; `selector` singles out each group's nodes."""
    namespace: str
    """Namespace of the marker DaemonSets; its Pod Security level must allow hostPath volumes."""
    crds: pulumi.Resource
    """The release that installs NFD and its CRDs (the GPU operator's)."""
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
        rules = resource_opts(self, depends_on=[args.crds])
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
        if args.magnum_driver is not None:
            self.rules["gpu-taint"] = self._rule(f"{name}-gpu-taint", gpu_taint_rule_spec(), rules)
        self.register_outputs({"markers": {g: d.metadata["name"] for g, d in self.markers.items()},
                               "rules": {k: r.metadata["name"] for k, r in self.rules.items()}})

    @staticmethod
    def _rule(logical: str, spec: dict[str, Any], opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
        return k8s.apiextensions.CustomResource(
            logical, api_version=NFD_API_VERSION, kind="NodeFeatureRule",
            metadata={"labels": standard_labels("node-contract")}, spec=spec, opts=opts,
        )
