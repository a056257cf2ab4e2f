"""What to run for an edit `pulumi up` cannot carry out in place: a stack-file edit that lands on an input `ignoreChanges` keeps out, or a protected Magnum cluster that a template change would replace.

Magnum's first node group is the cluster's own `default-worker` group: its bounds are cluster
labels (`min_node_count`, `max_node_count`), read at creation only, and a change of the cluster's
labels would be a new cluster (components/cluster/cluster.py keeps them out of the diff). The
pulumi-openstack provider has no resource for that group, so the edit cannot reach it through
`pulumi up`; Magnum's API changes it in place: `openstack coe nodegroup update <cluster>
<nodegroup> replace <attribute>=<value>` (python-magnumclient). Starting counts (`node_count`)
are the autoscaler's afterwards; `openstack coe cluster resize <cluster> <n> --nodegroup <group>`
resizes at once.
"""

from __future__ import annotations

from typing import Any

MAGNUM_CLUSTER = "openstack:containerinfra/cluster:Cluster"
MAGNUM_NODE_GROUP = "openstack:containerinfra/nodeGroup:NodeGroup"
DEFAULT_GROUP = "default-worker"
_BOUNDS = {"min_node_count": "minNodes", "max_node_count": "maxNodes"}


def _where(logical_name: str) -> str:
    # The provider auto-names the cluster `<logical name>-<random suffix>`.
    return f", where <cluster> is the Magnum cluster {logical_name}-<suffix> (`openstack coe cluster list`)"


def ignored_change_hint(resource: dict[str, Any], path: tuple, new_inputs: dict[str, Any]) -> str:
    """What to run for an ignored change of `path` in a resource's inputs ("" when nothing applies)."""
    kind, name = resource.get("type"), resource.get("name", "")
    if kind == MAGNUM_CLUSTER and len(path) == 2 and path[0] == "labels" and path[1] in _BOUNDS:
        value = (new_inputs.get("labels") or {}).get(path[1])
        return (f"; the first node group's {_BOUNDS[path[1]]} counts at cluster creation only (a Magnum cluster label; "
                f"pulumi-openstack has no resource for {DEFAULT_GROUP}), so change it with Magnum's API: "
                f"`openstack coe nodegroup update <cluster> {DEFAULT_GROUP} replace {path[1]}={value}`" + _where(name))
    if kind == MAGNUM_CLUSTER and path == ("nodeCount",):
        return (f"; the autoscaler sizes the first node group from here on; to resize it now: "
                f"`openstack coe cluster resize <cluster> {new_inputs.get('nodeCount')} --nodegroup {DEFAULT_GROUP}`" + _where(name))
    if kind == MAGNUM_NODE_GROUP and path == ("nodeCount",):
        # An unnamed NodeGroup is auto-named too (`openstack coe nodegroup list <cluster>`).
        group = new_inputs.get("name") or f"{name}-<suffix>"
        return (f"; the autoscaler sizes the group from here on; to resize it now: `openstack coe cluster resize "
                f"<cluster> {new_inputs.get('nodeCount')} --nodegroup {group}`")
    return ""


def replacement_hint(resource_type: str, reason: str) -> str:
    """What to do when a protected resource would be replaced for this reason ("" when nothing applies)."""
    if resource_type == MAGNUM_CLUSTER and reason.startswith("replaceOnChanges clusterTemplateId"):
        # components/cluster/cluster.py template_change_needs_new_cluster: the reasons, with their sources.
        return ("; this cluster's Magnum driver cannot move it to a new template in place (heat refuses every "
                "upgrade; magnum-cluster-api puts the template's image on groups with their own image): keep "
                "cluster.magnum.kubernetesVersion and template as deployed, and move to a new cluster in a new stack")
    return ""
