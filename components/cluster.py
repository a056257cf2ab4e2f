"""The Kubernetes cluster: an OpenStack Magnum cluster with its node groups (and the
autoscaler of the extra groups, autoscaler.py), or an existing cluster; either way,
the kubernetes Provider every other part uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s
import pulumi_openstack as openstack

from .autoscaler import NodeGroupAutoscaler
from .autoscaler import deployed as autoscaler_deployed
from .common import resource_opts
from .config import NodeGroup, Settings

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GROUP_LABEL = "inference-platform/node-group"
GPU_MODEL_LABEL = "inference-platform/gpu-model"
# cluster-autoscaler cloudprovider/magnum: GPULabel.
MAGNUM_GPU_LABEL = "magnum.openstack.org/gpu"


def node_labels(group: NodeGroup) -> dict[str, str]:
    """Kubernetes labels every node of the group carries (the scheduling contract):
    the group, and on GPU groups the GPU model and the MIG or device-plugin config
    the GPU operator applies to the node."""
    # Imported here: gpu_profiles builds on this module's taints and labels.
    from .gpu_profiles import sharing_labels

    labels = {GROUP_LABEL: group.name, **group.labels}
    if group.gpu is not None:
        labels[GPU_MODEL_LABEL] = group.gpu.model
        labels.update(sharing_labels(group))
    return labels


def node_taints(group: NodeGroup) -> list[dict[str, str]]:
    """Taints of the group's nodes: the configured ones, plus the GPU taint on GPU groups."""
    taints = [t.model_dump() for t in group.taints]
    if group.gpu is not None and not any(t["key"] == GPU_TAINT["key"] for t in taints):
        taints.append(dict(GPU_TAINT))
    return taints


@dataclass(frozen=True)
class ClusterHandle:
    """What other parts need from the cluster."""

    provider: k8s.Provider
    kubeconfig: Optional[pulumi.Output]
    node_groups: tuple[NodeGroup, ...]
    subnet_cidr: Optional[str]


def _kubelet_options(group: NodeGroup) -> str:
    # Magnum's Kubernetes driver appends the `kubelet_options` label to the kubelet's
    # arguments on every node of the group (configure-kubernetes-minion.sh), next to
    # its own magnum.openstack.org/{role,nodegroup} labels; the cluster's labels also
    # reach the control plane, hence a CPU group first (gpu_profiles.check_gpu_settings).
    labels = dict(node_labels(group))
    if group.advertises_whole_gpus:
        # The Magnum cluster-autoscaler counts a node carrying this label as not ready
        # until it advertises nvidia.com/gpu, so it does not add a second node while
        # drivers install. Nodes that advertise MIG slices or renamed shares never do,
        # and would count as unready for ever: they go without it.
        labels[MAGNUM_GPU_LABEL] = "true"
    labels = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    taints = ",".join(f"{t['key']}{'=' + t['value'] if t['value'] else ''}:{t['effect']}" for t in node_taints(group))
    options = f"--node-labels={labels}"
    return options + (f" --register-with-taints={taints}" if taints else "")


# node_count is where a group starts: the autoscaler moves it afterwards, and a refresh
# reads the live count back. Without this, the next `up` would resize every group to
# its starting count and undo the autoscaler.
_AUTOSCALED = pulumi.ResourceOptions(ignore_changes=["node_count"])


def gpu_node_ready_seconds(settings: Settings) -> int:
    """From a new VM to a GPU node that advertises its GPUs: boot, then the driver."""
    st, driver = settings.cold_start.stage_seconds, settings.gpu_operator.driver.mode
    if driver == "preinstalled" or not settings.gpu_operator.enabled:
        return st.node_boot
    return st.node_boot + st.driver_install + (st.driver_compile if driver == "compiled" else 0)


class Cluster(pulumi.ComponentResource):
    """The cluster and the kubernetes Provider built from its credentials."""

    def __init__(self, name: str, settings: Settings, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("inference-platform:cluster:Cluster", name, None, opts)
        cfg = settings.cluster
        protect = settings.production
        magnum: Optional[openstack.containerinfra.Cluster] = None
        node_groups: list[openstack.containerinfra.NodeGroup] = []
        if cfg.mode == "magnum":
            magnum, node_groups = self._magnum(name, settings, protect)
            kubeconfig = pulumi.Output.secret(magnum.kubeconfig["raw_config"])
            context = None
            subnet = cfg.magnum.subnet_cidr
        else:
            kubeconfig = (
                pulumi.Output.secret(settings.kubeconfig.get_secret_value()) if settings.kubeconfig else None
            )
            context = cfg.existing.context
            subnet = None
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=kubeconfig,
            context=context,
            opts=resource_opts(self),
        )
        if magnum is not None and autoscaler_deployed(settings):
            # Magnum's own autoscaler sizes only the default group; this one the others.
            NodeGroupAutoscaler(f"{name}-autoscaler", cfg.node_groups[1:], magnum.id, self.provider,
                                depends_on=node_groups, gpu_node_ready_seconds=gpu_node_ready_seconds(settings),
                                opts=pulumi.ResourceOptions(parent=self))
        self.handle = ClusterHandle(
            provider=self.provider, kubeconfig=kubeconfig, node_groups=tuple(cfg.node_groups), subnet_cidr=subnet
        )
        self.register_outputs({"kubeconfig": kubeconfig} if kubeconfig is not None else {})

    def _magnum(
        self, name: str, settings: Settings, protect: bool
    ) -> tuple[openstack.containerinfra.Cluster, list[openstack.containerinfra.NodeGroup]]:
        m = settings.cluster.magnum
        groups = settings.cluster.node_groups
        if m.template_id:
            template_id: pulumi.Input[str] = m.template_id
        else:
            t = m.template
            template = openstack.containerinfra.ClusterTemplate(
                f"{name}-template",
                coe="kubernetes",
                image=t.image,
                external_network_id=t.external_network_id,
                master_flavor=t.master_flavor,
                flavor=t.flavor,
                docker_volume_size=t.docker_volume_size,
                network_driver=t.network_driver,
                dns_nameserver=t.dns_nameserver,
                master_lb_enabled=t.master_lb_enabled,
                floating_ip_enabled=t.floating_ip_enabled,
                labels={"kube_tag": m.kubernetes_version, **t.labels},
                opts=resource_opts(self),
            )
            template_id = template.id
        # The first group is Magnum's default worker group; the others are NodeGroups.
        # Autoscaling: the cluster labels turn on the cluster-autoscaler Magnum deploys,
        # which sizes only the default group (--nodes=min:max:default-worker). The
        # NodeGroups are scaled between min_node_count and max_node_count by our own
        # cluster-autoscaler (autoscaler.py), which finds them with
        # --node-group-auto-discovery=magnum:role=<roles> (role = the group's name) and
        # reuses the Secrets Magnum creates for its autoscaler. The Magnum provider's node
        # template has no GPUs, so a GPU group cannot scale up from zero.
        default, extra = groups[0], groups[1:]
        cluster = openstack.containerinfra.Cluster(
            f"{name}-magnum",
            cluster_template_id=template_id,
            master_count=m.master_count,
            node_count=default.start_nodes,
            flavor=default.flavor,
            keypair=m.keypair,
            fixed_network=m.fixed_network,
            fixed_subnet=m.fixed_subnet,
            merge_labels=True,
            labels={
                "auto_scaling_enabled": "true",
                "min_node_count": str(default.min_nodes),
                "max_node_count": str(default.max_nodes),
                "kubelet_options": _kubelet_options(default),
            },
            opts=pulumi.ResourceOptions.merge(resource_opts(self, protect=protect), _AUTOSCALED),
        )
        node_groups = [
            openstack.containerinfra.NodeGroup(
                f"{name}-{group.name}",
                cluster_id=cluster.id,
                role=group.name,
                flavor_id=group.flavor,
                image_id=group.image,
                node_count=group.start_nodes,
                min_node_count=group.min_nodes,
                max_node_count=group.max_nodes,
                merge_labels=True,
                labels={"kubelet_options": _kubelet_options(group)},
                opts=pulumi.ResourceOptions.merge(resource_opts(self, protect=protect), _AUTOSCALED),
            )
            for group in extra
        ]
        return cluster, node_groups
