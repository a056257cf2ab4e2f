"""What to run for an edit `pulumi up` cannot carry out in place: a stack-file edit that lands on an input `ignoreChanges` keeps out, or a protected Magnum cluster that a template change would replace.

Magnum's first node group is the cluster's own `default-worker` group: its bounds are cluster
labels (`min_node_count`, `max_node_count`), read at creation only, and a change of the cluster's
labels would be a new cluster (components/cluster/cluster.py keeps them out of the diff). The
pulumi-openstack provider has no resource for that group, so the edit cannot reach it through
`pulumi up`; Magnum's API changes it in place: `openstack coe nodegroup update <cluster>
<nodegroup> replace <attribute>=<value>` (python-magnumclient). On Heat that changes Magnum's record
only (magnum stable/2026.1 drivers/heat/driver.py update_nodegroup saves it): Magnum's own autoscaler
takes the group's bounds from its `--nodes=<min>:<max>:default-worker` flag (fragments/
enable-auto-scaling.sh:147; cluster-autoscaler's magnum provider reads static bounds from it,
magnum_cloud_provider.go BuildMagnum), written into its kube-system Deployment once, at creation
(k8s_fedora_coreos_v1/templates/kubecluster.yaml kube_cluster_deploy: actions CREATE), so that flag is
edited too. Starting counts (`node_count`)
are the autoscaler's afterwards; `openstack coe cluster resize <cluster> <n> --nodegroup <group>`
resizes at once.
"""

from __future__ import annotations

from typing import Any, Optional

MAGNUM_CLUSTER = "openstack:containerinfra/cluster:Cluster"
MAGNUM_NODE_GROUP = "openstack:containerinfra/nodeGroup:NodeGroup"
DEFAULT_GROUP = "default-worker"
_BOUNDS = {"min_node_count": "minNodes", "max_node_count": "maxNodes"}


def _where(logical_name: str) -> str:
    # The provider auto-names the cluster `<logical name>-<random suffix>`.
    return f", where <cluster> is the Magnum cluster {logical_name}-<suffix> (`openstack coe cluster list`)"


def magnum_group_name(resource: dict[str, Any]) -> str:
    """A NodeGroup's name in Magnum (an unnamed one is auto-named `<logical name>-<suffix>`)."""
    return (resource.get("inputs") or {}).get("name") or f"{resource.get('name', '')}-<suffix>"


def _heat_autoscaler_bounds(labels: dict[str, Any]) -> str:
    # Magnum's own autoscaler on Heat keeps the bounds of its --nodes flag (module docstring).
    return (f"; on heat that changes Magnum's record only, and Magnum's own autoscaler keeps the bounds it was created "
            f"with: set them in its flag as well, `kubectl -n kube-system edit deployment cluster-autoscaler`, "
            f"`--nodes={labels.get('min_node_count')}:{labels.get('max_node_count')}:{DEFAULT_GROUP}`")


def ignored_change_hint(resource: dict[str, Any], path: tuple, new_inputs: dict[str, Any],
                        driver: Optional[str] = None) -> str:
    """What to run for an ignored change of `path` in a resource's inputs ("" when nothing applies);
    `driver`: the stack's Magnum driver, where the plan records it."""
    kind, name = resource.get("type"), resource.get("name", "")
    if kind == MAGNUM_CLUSTER and len(path) == 2 and path[0] == "labels" and path[1] in _BOUNDS:
        labels = new_inputs.get("labels") or {}
        return (f"; the first node group's {_BOUNDS[path[1]]} counts at cluster creation only (a Magnum cluster label; "
                f"pulumi-openstack has no resource for {DEFAULT_GROUP}), so change it with Magnum's API: "
                f"`openstack coe nodegroup update <cluster> {DEFAULT_GROUP} replace {path[1]}={labels.get(path[1])}`"
                + _where(name) + (_heat_autoscaler_bounds(labels) if driver == "heat" else ""))
    if kind == MAGNUM_CLUSTER and path and path[0] == "labels":
        # components/cluster/cluster.py keeps the whole label map: the provider reads the template's labels back into it.
        return ("; a Magnum cluster's labels count at its creation only (a change would be a new cluster: `labels` is "
                "ForceNew in terraform-provider-openstack), so this edit does not reach the cloud: restore the old "
                "value, or create a new cluster with it")
    if kind == MAGNUM_CLUSTER and path == ("nodeCount",):
        return (f"; the autoscaler sizes the first node group from here on; to resize it now: "
                f"`openstack coe cluster resize <cluster> {new_inputs.get('nodeCount')} --nodegroup {DEFAULT_GROUP}`" + _where(name))
    if kind == MAGNUM_NODE_GROUP and path == ("nodeCount",):
        # An unnamed NodeGroup is auto-named too (`openstack coe nodegroup list <cluster>`).
        group = magnum_group_name(resource)
        return (f"; the autoscaler sizes the group from here on; to resize it now: `openstack coe cluster resize "
                f"<cluster> {new_inputs.get('nodeCount')} --nodegroup {group}`")
    return ""


def node_bound_note(key: str, resource: dict[str, Any], old_inputs: dict[str, Any], new_inputs: dict[str, Any]) -> str:
    """A note for a node group update that raises its minimum or lowers its maximum: Magnum checks
    the new bounds against the group's live count (magnum api/controllers/v1/nodegroup.py
    _validate_node_count, min_node_count <= node_count <= max_node_count), which the plan cannot see.
    On magnum-cluster-api the count is the MachineDeployment's replicas, which the driver's monitor
    copies back on every poll while autoscaling is on (monitor.py poll_nodegroup_replicas), and a
    resize leaves the MachineDeployment alone under autoscaling: only the autoscaler moves it."""
    if resource.get("type") != MAGNUM_NODE_GROUP:
        return ""
    low, high = new_inputs.get("minNodeCount"), new_inputs.get("maxNodeCount")
    raised = low is not None and low > (old_inputs.get("minNodeCount") or 0)
    lowered = high is not None and old_inputs.get("maxNodeCount") is not None and high < old_inputs["maxNodeCount"]
    if not (raised or lowered):
        return ""
    group = new_inputs.get("role") or resource.get("name", "")
    key_path = f"inference-platform:cluster.nodeGroups[{group}]"
    bounds = " and ".join(([f"{key_path}.minNodes rises to {low}"] if raised else [])
                          + ([f"{key_path}.maxNodes falls to {high}"] if lowered else []))
    return (f"note: {key}: {bounds}: Magnum refuses the update unless the group's live node count is within "
            f"[{low}, {high}] (min_node_count <= node_count <= max_node_count); see it with `openstack coe nodegroup "
            f"show <cluster> {magnum_group_name(resource)}` (or rehearse with "
            f"`platformctl rehearse STACK --live-nodes {group}=N`), and resize first if it is outside: "
            f"`openstack coe cluster resize <cluster> <n> --nodegroup <group>` (Heat, magnum-capi-helm); on "
            f"magnum-cluster-api a resize does not stick (its monitor sets the count back from the MachineDeployment "
            f"the autoscaler sizes), so let the autoscaler move the group into the bounds first (pods that need "
            f"its nodes, e.g. more coldStart.spareSlots, or fewer)")


def node_group_delete_note(key: str, action: str, resource: dict[str, Any]) -> str:
    """A note for a Magnum node group the `up` deletes (removed, or replaced: named groups go first).
    terraform-provider-openstack v3.4.0 waits for the delete with Pending DELETE_IN_PROGRESS
    (resource_openstack_containerinfra_nodegroup_v1.go), but Magnum deletes in the background, so
    its first poll may still read CREATE_COMPLETE and fail ("unexpected state 'CREATE_COMPLETE'",
    terraform-provider-openstack#2066, open)."""
    if resource.get("type") != MAGNUM_NODE_GROUP or action not in ("delete", "replace"):
        return ""
    group = magnum_group_name(resource)
    return (f"note: {key}: the `up` deletes Magnum node group {group}, and the provider may fail it with "
            f"\"unexpected state 'CREATE_COMPLETE'\" while Magnum deletes it in the background "
            f"(terraform-provider-openstack#2066); if so, wait until `openstack coe nodegroup list <cluster>` no "
            f"longer lists {group}, then `pulumi refresh` and `pulumi up` again")


def node_group_create_note(key: str, action: str, resource: dict[str, Any]) -> str:
    """A note for a Magnum node group the `up` creates (new, or the new one of a replacement). Magnum's
    API answers the create before anything is stored: it casts the create to the conductor, which
    writes the group's record (magnum stable/2026.1 api/controllers/v1/nodegroup.py post ->
    nodegroup_create_async; conductor/handlers/nodegroup_conductor.py nodegroup_create).
    terraform-provider-openstack v3.4.0 polls at once (Delay 0, Pending CREATE_IN_PROGRESS) and takes
    a 404 for DELETE_COMPLETE (containerinfra_shared_v1.go containerInfraNodeGroupV1StateRefreshFunc),
    a state outside its wait, so a poll that beats the conductor fails the create (the converse of
    terraform-provider-openstack#2066); the provider has set the group's ID before its wait."""
    if resource.get("type") != MAGNUM_NODE_GROUP or action not in ("create", "replace"):
        return ""
    group = magnum_group_name(resource)
    return (f"note: {key}: the `up` creates Magnum node group {group}, and the provider may fail it with "
            f"\"unexpected state 'DELETE_COMPLETE', wanted target 'CREATE_COMPLETE'\" when its first poll comes before "
            f"Magnum's conductor has stored the group, while Magnum goes on creating it; if so, wait until "
            f"`openstack coe nodegroup show <cluster> {group}` says CREATE_COMPLETE, then `pulumi refresh` and "
            f"`pulumi up` again (what runs on the group waits for it)")


def replacement_hint(resource_type: str, reason: str) -> str:
    """What to do when a protected resource would be replaced for this reason ("" when nothing applies)."""
    if resource_type == MAGNUM_CLUSTER and reason.startswith("replaceOnChanges clusterTemplateId"):
        # components/cluster/cluster.py template_change_needs_new_cluster: the reasons, with their sources.
        return ("; this cluster's Magnum driver cannot move it to a new template in place (heat refuses every "
                "upgrade; magnum-cluster-api puts the template's image on groups with their own image): keep "
                "cluster.magnum.kubernetesVersion and template as deployed, and move to a new cluster in a new stack")
    return ""
