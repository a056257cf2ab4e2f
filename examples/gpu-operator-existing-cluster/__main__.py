"""The NVIDIA GPU operator alone, on a cluster that already exists.

It installs the operator (driver, device plugin, MIG manager, DCGM exporter, Node Feature
Discovery), the MIG layout and time-slicing config the node groups select, and the GPU node
contract: NFD rules that label and taint each group's nodes, found by the group's `selector`.
The node groups come from the stack's config (Pulumi.example.yaml).
"""

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.gpu.operator import GpuOperator

config = pulumi.Config()

# The cluster the kubeconfig's current context points at, or the context named in the stack's
# config (`pulumi config set kubeContext <name>`).
provider = k8s.Provider("cluster", context=config.get("kubeContext"))

operator = GpuOperator(
    "gpu",
    {
        # Every node group of the cluster: GPU groups get the node contract and their sharing
        # config; the operator's node agents tolerate every group's taints.
        "node_groups": config.require_object("nodeGroups"),
        # Driver mode and DCGM exporter (default: precompiled drivers, DCGM on).
        "gpu_operator": config.get_object("gpuOperator") or {},
        # No magnum_labeller: nodes are found by the selectors the node groups give.
    },
    # DCGM's ServiceMonitor needs the prometheus-operator CRDs: on this cluster they already
    # exist. Where the same program installs them, add depends_on=[<that Helm release>].
    opts=pulumi.ResourceOptions(providers={"kubernetes": provider}),
)

pulumi.export("namespace", operator.namespace.metadata["name"])
pulumi.export("release", operator.release.name)
