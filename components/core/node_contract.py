"""Names of the GPU node contract: the labels and taint the platform puts on a group's nodes,
and the label each Magnum driver already puts there, which says which group a node is in.

A leaf module: it imports nothing from the package, so settings, resource builders and
policies can all use it.
"""

from __future__ import annotations

import re

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GROUP_LABEL = "inference-platform/node-group"
GPU_MODEL_LABEL = "inference-platform/gpu-model"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# cluster-autoscaler cloudprovider/magnum: GPULabel (Heat clusters, whose extra groups our own
# autoscaler sizes).
MAGNUM_GPU_LABEL = "magnum.openstack.org/gpu"
# kubernetes/autoscaler cloudprovider/clusterapi/clusterapi_provider.go:43 GPULabel (the same in
# cluster-autoscaler-1.34.4, which magnum-cluster-api 0.38.1 runs at 1.34 (images.py), and 1.34.5, the
# platform's pin): the label the autoscaler of both Cluster API drivers reads. Like MAGNUM_GPU_LABEL, a node
# with it but no GPU allocatable counts as unready (processors/customresources/gpu_processor.go,
# FilterOutNodesWithUnreadyResources), so the autoscaler adds no second node while the driver
# installs; the value is the GPU type it reports.
CLUSTER_API_GPU_LABEL = "cluster-api/accelerator"

# Magnum names a cluster's own worker group "default-<role>" (magnum/conductor/utils.py).
MAGNUM_DEFAULT_WORKER = "default-worker"

# The node label each driver gives every node of a node group, from the moment the kubelet
# registers (value: the node group's name; the cluster's own group is MAGNUM_DEFAULT_WORKER).
MAGNUM_GROUP_LABELS = {
    # openstack/magnum stable/2026.1, drivers/common/.../configure-kubernetes-minion.sh:
    # KUBELET_ARGS --node-labels=magnum.openstack.org/nodegroup=${NODEGROUP_NAME}
    "heat": "magnum.openstack.org/nodegroup",
    # vexxhost/magnum-cluster-api 0.38.1, resources.mutate_machine_deployment: MachineDeployment
    # metadata labels, which Cluster API syncs to the Node (node.cluster.x-k8s.io/ domain).
    "magnum-cluster-api": "node.cluster.x-k8s.io/nodegroup",
    # openstack/magnum-capi-helm 1.4.0 renders azimuth-cloud/capi-helm-charts openstack-cluster:
    # node-group/kubeadm-config-template.yaml joins with node label <projectPrefix>/node-group,
    # projectPrefix capi.stackhpc.com; the driver passes the group name through sanitized_name.
    "magnum-capi-helm": "capi.stackhpc.com/node-group",
}


def capi_helm_sanitized(name: str) -> str:
    """A node group's name as magnum-capi-helm writes it into the node label
    (magnum_capi_helm/driver_utils.py sanitized_name at 1.4.0: lower case, every run of
    characters outside [a-z0-9] one `-`, no `-` at either end)."""
    return re.sub("[^a-z0-9]+", "-", name.lower()).strip("-")


def magnum_group_selector(driver: str, index: int, name: str) -> dict[str, str]:
    """The node selector of the index-th node group of a Magnum cluster whose nodes the
    given driver labels (the first group is the cluster's own default worker group). The
    group's Magnum name is `name` (components/cluster/cluster.py names every NodeGroup)."""
    group = MAGNUM_DEFAULT_WORKER if index == 0 else name
    if driver == "magnum-capi-helm":
        group = capi_helm_sanitized(group)
    return {MAGNUM_GROUP_LABELS[driver]: group}
