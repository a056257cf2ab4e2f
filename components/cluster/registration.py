"""What a Magnum node group's nodes carry from the moment their kubelet registers, where the
driver lets the platform say so: on Heat, the GPU taint and the autoscaler's GPU label.

Only Heat passes kubelet flags from a node group: a node group's Heat stack reads the group's
own labels (openstack/magnum stable/2026.1, drivers/heat/template_def.py _get_relevant_labels:
`nodegroups[0].labels`), among them `kubelet_options` (k8s_template_def.py get_params), which
configure-kubernetes-minion.sh appends to KUBELET_ARGS after its own `--node-labels`. Neither
Cluster API driver has such a key: magnum-cluster-api 0.38.1 gives a MachineDeployment fixed
labels and autoscaler annotations only (resources.mutate_machine_deployment), magnum-capi-helm
1.4.0 passes a group's name, flavor, count and bounds only (driver._process_node_groups). There
the contract comes from Node Feature Discovery (gpu/node_rules.py), after the node is Ready.

Only the fixed part of the contract goes here: node group labels are ForceNew (a change
replaces the group and its nodes), so the group's own labels and taints stay with NFD, which
updates them in place.
"""

from __future__ import annotations

from typing import Optional

from inference_platform.core.node_contract import GPU_TAINT, MAGNUM_GPU_LABEL
from inference_platform.settings.cluster import MagnumCluster, NodeGroup

KUBELET_OPTIONS = "kubelet_options"


def kubelet_registration_flags(group: NodeGroup) -> list[str]:
    """Kubelet flags that put the fixed GPU contract on a GPU group's nodes at registration.

    `--register-with-taints` takes one comma-separated list of `<key>=<value>:<effect>`, and a
    second flag would replace the first (kubernetes cmd/kubelet/app/options/options.go,
    utiltaints.NewTaintsVar); `--node-labels` adds to the driver's own (a repeatable map flag, as
    Heat itself gives it twice)."""
    if group.gpu is None:
        return []
    flags = [f"--register-with-taints={GPU_TAINT['key']}={GPU_TAINT['value']}:{GPU_TAINT['effect']}"]
    if group.advertises_whole_gpus:
        # The Magnum autoscaler's GPULabel: the node counts as unready until it advertises
        # nvidia.com/gpu, so no second node is added while the driver installs. Not on groups
        # that never advertise it (MIG mixed, renamed shares): they would stay unready for ever.
        flags.append(f"--node-labels={MAGNUM_GPU_LABEL}=true")
    return flags


def node_group_labels(m: MagnumCluster, group: NodeGroup) -> Optional[dict[str, str]]:
    """Magnum labels of a node group (None: the cluster's, as Magnum copies them when none are
    given). Merged over the cluster's labels (`merge_labels`), so only `kubelet_options` differs;
    a `kubelet_options` of the template's labels comes first, as a group's value replaces it."""
    flags = kubelet_registration_flags(group) if m.driver == "heat" else []
    if not flags:
        return None
    inherited = m.template.labels.get(KUBELET_OPTIONS)
    return {KUBELET_OPTIONS: " ".join([inherited, *flags] if inherited else flags)}


def node_group_label_inputs(m: MagnumCluster, group: NodeGroup) -> dict[str, object]:
    """The NodeGroup's `labels` and `merge_labels` inputs; none where there is nothing to add, so
    Magnum copies the cluster's labels as before."""
    labels = node_group_labels(m, group)
    return {} if labels is None else {"labels": labels, "merge_labels": True}
