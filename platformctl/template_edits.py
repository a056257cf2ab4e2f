"""Cluster template edits the Magnum driver does not carry to a running cluster.

A changed template is a new ClusterTemplate, and the cluster moves to it in place (Magnum's cluster
upgrade). On magnum-cluster-api that upgrade takes from the new template only the `kube_tag` label
(into the cluster's and every group's labels) and the image (every group's image_id): v0.38.1
driver.py upgrade_cluster, "The only label that we change during the upgrade is the `kube_tag`
label". Flavors, the volume size, the load balancer and floating IP switches and every other label
were copied into the cluster and its groups when they were created, and stay. The DNS servers,
external network and network driver the driver reads from the cluster's template whenever it renders
the cluster (resources.py `cluster_template.dns_nameserver`, `.external_network_id`,
`.network_driver`), so they reach it at some later change, not with the upgrade.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from .propertypath import Path as PropPath
from .propertypath import format_path, leaf_changes

MAGNUM_CLUSTER = "openstack:containerinfra/cluster:Cluster"
MAGNUM_TEMPLATE = "openstack:containerinfra/clusterTemplate:ClusterTemplate"
MCAPI = "magnum-cluster-api"
# What magnum-cluster-api's upgrade takes from the new template.
UPGRADE_TAKES = {("image",), ("labels", "kube_tag")}
READ_LATER = {"dnsNameserver", "externalNetworkId", "networkDriver"}
# The ClusterTemplate inputs the stack file sets (components/cluster/cluster.py _template), by key path.
STACK_KEYS = {
    "flavor": "cluster.magnum.template.flavor",
    "masterFlavor": "cluster.magnum.template.masterFlavor",
    "dockerVolumeSize": "cluster.magnum.template.dockerVolumeSize",
    "masterLbEnabled": "cluster.magnum.template.masterLbEnabled",
    "floatingIpEnabled": "cluster.magnum.template.floatingIpEnabled",
    "dnsNameserver": "cluster.magnum.template.dnsNameserver",
    "externalNetworkId": "cluster.magnum.template.externalNetworkId",
    "networkDriver": "cluster.magnum.template.networkDriver",
    "labels": "cluster.magnum.template.labels",
}


def _key_path(path: PropPath) -> str:
    base = STACK_KEYS.get(str(path[0]))
    shown = f"{base}.{'.'.join(map(str, path[1:]))}" if base and len(path) > 1 else base or f"the template's {format_path(path)}"
    return f"inference-platform:{shown}" if base else shown


def template_edit_findings(changes: Iterable[Any], old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]],
                           driver: Optional[str]) -> tuple[list[str], list[str]]:
    """Errors for template edits the cluster's upgrade drops, notes for those it defers: on
    magnum-cluster-api, and only where the cluster moves to the new template in place (a cluster
    replaced or created takes the whole template)."""
    changes = list(changes)
    moved_in_place = any(c.type == MAGNUM_CLUSTER and c.action == "update" for c in changes)
    if driver != MCAPI or not moved_in_place:
        return [], []
    errors, notes = [], []
    for c in changes:
        if c.type != MAGNUM_TEMPLATE or c.action != "replace" or c.key not in old:
            continue
        paths = [p for p in leaf_changes(old[c.key].get("inputs") or {}, new[c.key].get("inputs") or {})
                 if p not in UPGRADE_TAKES]
        name = c.key.rsplit("::", 1)[-1]
        dropped = [p for p in paths if str(p[0]) not in READ_LATER]
        later = [p for p in paths if str(p[0]) in READ_LATER]
        if dropped:
            errors.append(
                f"error: ClusterTemplate {name}: {', '.join(_key_path(p) for p in dropped)} changes, but {MCAPI} moves "
                "a running cluster to a new template with its image and kube_tag only (driver.py upgrade_cluster): "
                "the cluster and its node groups keep the old value. Restore the deployed value; for other nodes add "
                "a node group (cluster.nodeGroups[] with its own flavor and labels), or create a new cluster with it "
                "in a new stack")
        if later:
            notes.append(
                f"note: ClusterTemplate {name}: {', '.join(_key_path(p) for p in later)} changes: {MCAPI} does not "
                "apply it with the upgrade but reads it from the cluster's template whenever it next renders the "
                "cluster (a resize, a node group change): restore the deployed value unless that is meant")
    return errors, notes
