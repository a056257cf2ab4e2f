"""The Kubernetes cluster: an OpenStack Magnum cluster with its node groups (and the
autoscaler of the extra groups, autoscaler.py), or an existing cluster; either way,
the kubernetes Provider every other part uses."""


import re
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s
import pulumi_openstack as openstack

from inference_platform.args import ClusterArgs
from inference_platform.cluster.autoscaler import NodeGroupAutoscaler
from inference_platform.cluster.autoscaler import deployed as autoscaler_deployed
from inference_platform.cluster.inputs import ClusterInputs
from inference_platform.cluster.registration import node_group_label_inputs
from inference_platform.core.common import init_component, resource_opts
from inference_platform.settings.cluster import HEAT_CONTAINERD, ClusterSettings, MagnumCluster, NodeGroup
from inference_platform.settings.component_args import validated
from inference_platform.timing.readiness import wait_seconds

# node_count is where a group starts: the autoscaler moves it afterwards, and a refresh
# reads the live count back. Without this, the next `up` would resize every group to
# its starting count and undo the autoscaler.
_AUTOSCALED = pulumi.ResourceOptions(ignore_changes=["node_count"])
# The cluster's labels count at creation only: a change of them is a new cluster (ForceNew in
# terraform-provider-openstack v3.4.0). What the provider reads back is not what we declared once
# the cluster's template moves: Magnum reports the labels against the current template
# (magnum api/utils.py get_labels_diff), and the provider's Read folds the template's skipped and
# overridden labels into `labels` (resource_openstack_containerinfra_cluster_v1.go Read,
# containerInfraV1GetLabelsMerged); on magnum-capi-helm a kube_tag bump alone does it. Ignoring
# single keys is not enough: the map's count (`labels.%`) still forces a new cluster, as the bridge
# drops only the ignored keys and those below them (pulumi-terraform-bridge
# pkg/tfshim/sdk-v2/instance_diff.go processIgnoreChanges). So the whole map is kept; the default
# group's bounds (labels min/max_node_count) change with `openstack coe nodegroup update <cluster>
# default-worker replace max_node_count=<n>` and, on Heat, in Magnum's autoscaler's --nodes flag
# (platformctl/day2_hints.py; docs/cluster.md, "Magnum drivers").
_DEFAULT_GROUP_SIZED = pulumi.ResourceOptions(ignore_changes=["node_count", "labels"])


def template_labels(m: MagnumCluster) -> dict[str, str]:
    """Labels of the cluster template: the version, and what the driver needs to run at all."""
    labels = {"kube_tag": m.kubernetes_version}
    if m.driver == "heat":
        # The Heat driver's default runtime is host-docker (kubecluster.yaml, container_runtime),
        # and Kubernetes has had no dockershim since 1.24.
        labels["container_runtime"] = "containerd"
        # Its default containerd is 1.4.4 (kubecluster.yaml, containerd_version), which lacks the
        # CRI v1 API every kubelet since 1.26 needs. install-cri.sh checks the tarball against
        # containerd_tarball_sha256 (default: 1.4.4's), so the version and its checksum go together.
        labels.update(HEAT_CONTAINERD)
    return {**labels, **m.template.labels}


def cluster_labels(m: MagnumCluster, default: NodeGroup) -> dict[str, str]:
    """Labels of the cluster, read by each driver at creation: autoscaling, the default
    group's bounds, the API load balancer's floating IP and allow-list, the node subnet."""
    labels = {
        "auto_scaling_enabled": "true",
        "min_node_count": str(default.min_nodes),
        "max_node_count": str(default.max_nodes),
        # All three drivers read it (heat template_def.py, magnum-cluster-api utils.py
        # get_cluster_floating_ip_disabled, magnum-capi-helm driver.py apiServer.associateFloatingIP).
        "master_lb_floating_ip_enabled": "true" if m.api_floating_ip else "false",
    }
    if m.fixed_subnet is None:
        # The subnet Magnum creates for the nodes (all three drivers: fixed_subnet_cidr).
        labels["fixed_subnet_cidr"] = m.subnet_cidr
    if m.api_allowed_cidrs:
        # heat only (the settings refuse the key on the Cluster API drivers); it appends the node
        # subnet itself (k8s_template_def._set_master_lb_allowed_cidrs).
        labels["master_lb_allowed_cidrs"] = ",".join(m.api_allowed_cidrs)
    return labels


def template_change_needs_new_cluster(m: MagnumCluster, groups: list[NodeGroup]) -> bool:
    """Whether the driver cannot move the cluster to another template in place (Magnum's cluster
    upgrade, what an update of cluster_template_id runs), so that a template change is a new cluster."""
    if m.driver == "heat":
        # openstack/magnum stable/2026.1 heat/driver.py FedoraKubernetesDriver.upgrade_cluster:
        # raises NotSupported ("blue-green deployments, by creating a new cluster").
        return True
    # vexxhost/magnum-cluster-api v0.38.1 driver.py upgrade_cluster sets every node group's image_id
    # to the template's: a group with its own image (a GPU driver in it) would lose it, and the
    # refreshed image_id, ForceNew, would replace the group on the next `up`.
    return m.node_labeller == "magnum-cluster-api" and any(g.image for g in groups[1:])


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def node_subnet_cidr(m: MagnumCluster) -> pulumi.Input[str]:
    """The CIDR of the nodes' subnet: the one Magnum creates, or the given subnet's, from Neutron."""
    if m.fixed_subnet is None:
        return m.subnet_cidr
    by = "subnet_id" if _UUID.fullmatch(m.fixed_subnet) else "name"
    return openstack.networking.get_subnet_output(**{by: m.fixed_subnet}).cidr


class Cluster(pulumi.ComponentResource):
    """The cluster and the kubernetes Provider built from its credentials."""

    kubeconfig: Optional[pulumi.Output[str]]
    """Secret. kubeconfig of the cluster (a Magnum cluster's, or the one given); unset for an existing cluster reached through the ambient kubeconfig."""

    def __init__(self, name: str, args: ClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(ClusterInputs, args, "Cluster")
        init_component(self, "Cluster", name, opts)
        cfg = a.cluster
        protect = a.production
        magnum: Optional[openstack.containerinfra.Cluster] = None
        node_groups: list[openstack.containerinfra.NodeGroup] = []
        if cfg.mode == "magnum":
            magnum, node_groups = self._magnum(name, cfg, protect, a.upgrade_seconds)
            kubeconfig = pulumi.Output.secret(magnum.kubeconfig["raw_config"])
            context = None
            subnet = node_subnet_cidr(cfg.magnum)
        else:
            kubeconfig = (
                pulumi.Output.secret(a.kubeconfig.get_secret_value()) if a.kubeconfig else None
            )
            context = cfg.existing.context
            subnet = None
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=kubeconfig,
            context=context,
            opts=resource_opts(self),
        )
        if magnum is not None and autoscaler_deployed(cfg):
            # Heat: Magnum's own autoscaler sizes only the default group; this one the others.
            NodeGroupAutoscaler(f"{name}-autoscaler", cfg.node_groups[1:], magnum.id, self.provider,
                                depends_on=node_groups, gpu_node_ready_seconds=a.gpu_node_ready_seconds,
                                opts=pulumi.ResourceOptions(parent=self))
        self.kubeconfig = kubeconfig
        self.subnet_cidr = subnet
        # The Magnum NodeGroups (the cluster's own first group has none), which GPU workloads wait for:
        # a workload's wait for its pods counts from its creation, not from its nodes' arrival.
        self.node_groups = node_groups
        self.register_outputs({"kubeconfig": kubeconfig} if kubeconfig is not None else {})

    def _magnum(
        self, name: str, cfg: ClusterSettings, protect: bool, upgrade_seconds: Optional[int] = None,
    ) -> tuple[openstack.containerinfra.Cluster, list[openstack.containerinfra.NodeGroup]]:
        m = cfg.magnum
        groups = cfg.node_groups
        if m.template_id:
            template_id: pulumi.Input[str] = m.template_id
        else:
            template_id = self._template(name, m).id
        # The first group is Magnum's default worker group; the others are NodeGroups, whose
        # bounds Magnum updates in place. Every driver autoscales between min and max once the
        # cluster label auto_scaling_enabled is set: the Cluster API drivers all groups (from
        # MachineDeployment annotations), Heat the default group only (its own autoscaler; ours,
        # autoscaler.py, sizes the NodeGroups).
        default, extra = groups[0], groups[1:]
        options = pulumi.ResourceOptions.merge(resource_opts(self, protect=protect), _DEFAULT_GROUP_SIZED)
        if upgrade_seconds is not None:
            # terraform-provider-openstack v3.4.0 waits 30 minutes for UPDATE_COMPLETE
            # (resource_openstack_containerinfra_cluster_v1.go Timeouts); an upgrade replaces every node.
            options = pulumi.ResourceOptions.merge(options, pulumi.ResourceOptions(
                custom_timeouts=pulumi.CustomTimeouts(update=f"{wait_seconds(upgrade_seconds) // 60}m")))
        if template_change_needs_new_cluster(m, groups):
            # A replacement instead of an upgrade that fails or breaks groups: refused on a protected
            # (production) cluster at preview, a new cluster elsewhere.
            options = pulumi.ResourceOptions.merge(options, pulumi.ResourceOptions(replace_on_changes=["cluster_template_id"]))
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
            labels=cluster_labels(m, default),
            opts=options,
        )
        # magnum-capi-helm creates a group by a `helm upgrade` of the whole cluster's release, without
        # a lock (magnum-capi-helm 1.4.0 driver.py create_nodegroup -> _update_helm_release): two groups
        # created at once race and one ends CREATE_FAILED. There each group waits for the one before it.
        chained = m.node_labeller == "magnum-capi-helm"
        node_groups: list[openstack.containerinfra.NodeGroup] = []
        for group in extra:
            after = [node_groups[-1]] if chained and node_groups else []
            node_groups.append(openstack.containerinfra.NodeGroup(
                f"{name}-{group.name}",
                # The group's own name, never the provider's: pulumi-openstack auto-names a resource
                # without one (provider/resources.go SetAutonaming: `<logical name>-<random>`), and
                # every driver labels the nodes with the real name (core/node_contract.py), which
                # the platform's node selectors name.
                name=group.name,
                cluster_id=cluster.id,
                role=group.name,
                flavor_id=group.flavor,
                image_id=group.image,
                node_count=group.start_nodes,
                min_node_count=group.min_nodes,
                max_node_count=group.max_nodes,
                # Heat GPU groups: the GPU taint and autoscaler label from registration (registration.py).
                **node_group_label_inputs(m, group),
                opts=pulumi.ResourceOptions.merge(resource_opts(self, protect=protect, depends_on=after), _AUTOSCALED),
            ))
        return cluster, node_groups

    def _template(self, name: str, m: MagnumCluster) -> openstack.containerinfra.ClusterTemplate:
        t = m.template
        return openstack.containerinfra.ClusterTemplate(
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
            labels=template_labels(m),
            # Magnum refuses to update a template a cluster uses (only its name and visibility:
            # db/sqlalchemy/api.py _do_update_cluster_template, ClusterTemplateReferenced). A
            # changed template is a new one; the cluster then moves to it in place (Magnum's
            # cluster upgrade) where the driver can (template_change_needs_new_cluster), and the
            # old one, no longer referenced, is deleted.
            opts=pulumi.ResourceOptions.merge(resource_opts(self), pulumi.ResourceOptions(replace_on_changes=["*"])),
        )
