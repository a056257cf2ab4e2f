"""What the cloud hands back: the state a stack's resources have after a refresh, and what Magnum
refuses, as the rehearsal (rehearse.py) plays them. Offline: a model of the upstream sources named
at each rule, not a cloud.

On a refresh the Terraform bridge reads the resource and makes its inputs from what it read
(pulumi-terraform-bridge pkg/tfbridge/provider.go Read: ExtractInputsFromOutputs on refresh), and
the next diff starts from there; so a refreshed value is written into both the inputs and the
outputs of the state, and the existing diff (diff.py) then does what the engine does with it.

Values the cloud moves (each read at the provider's Read of the resource we declare):
- Magnum cluster labels: Magnum stores the template's labels merged with the cluster's when
  merge_labels is set (magnum api/controllers/v1/cluster.py post), reports each cluster's labels
  against its *current* template (api/utils.py get_labels_diff: overridden, added, skipped), and
  terraform-provider-openstack v3.4.0 folds those into the ForceNew `labels`
  (resource_openstack_containerinfra_cluster_v1.go Read; containerinfra_shared_v1.go
  containerInfraV1GetLabelsMerged). A cluster upgrade moves the cluster to a new template but
  keeps its own labels, except magnum-cluster-api v0.38.1's `kube_tag` (driver.py upgrade_cluster);
  magnum-capi-helm 1.4.0 changes none (driver.py upgrade_cluster).
- Node counts: the autoscaler moves them; the provider reads them back (cluster: the default
  group's node_count; node group: node_count, resource_openstack_containerinfra_nodegroup_v1.go Read).
- Not modelled because a healthy cloud hands back what we declared: the S3 bucket (our provider's
  read reports versioning and the noncurrent rule, bucket.py), the Manila share (size and protocol
  as created), Kubernetes objects (pulumi-kubernetes keeps the last applied inputs on refresh).
  Node group labels and image are computed inputs we do not set (Optional+Computed in the
  Terraform schema): whatever Magnum reports there diffs against nothing.

What fails the `up` although Magnum goes on: a cluster upgrade that outlasts the provider's update
wait (terraform-provider-openstack v3.4.0 resource_openstack_containerinfra_cluster_v1.go: Update
defaults to 30 minutes; customTimeouts.update sets it), against the time replacing every node takes
(timing/readiness.py cluster_upgrade_budget).

What Magnum refuses during `pulumi up`, with nothing applied to that resource:
- a cluster upgrade on the Heat driver (magnum stable/2026.1 drivers/heat/driver.py
  FedoraKubernetesDriver.upgrade_cluster raises NotSupported);
- a node group whose new bounds leave out its live count (api/controllers/v1/nodegroup.py patch ->
  _validate_node_count: min_node_count <= node_count <= max_node_count); node_count is ours to
  ignore (components/cluster/cluster.py), so the provider sends only the new bounds.

The live count is Magnum's node_count. `openstack coe cluster resize <cluster> N --nodegroup G`
sets it (conductor/handlers/cluster_conductor.py cluster_resize; rehearse --resized), and on Heat
and magnum-capi-helm 1.4.0 it stays (capi_monitor.py polls MachineDeployment conditions only). On
magnum-cluster-api v0.38.1 it does not: the driver keeps an autoscaled MachineDeployment's
`replicas: None` (resources.py mutate_machine_deployment), so the resize leaves the spec as it was
(driver.py _update_nodegroup returns on an equal spec), and the monitor writes the
MachineDeployment's replicas (what the autoscaler left) back into node_count on every health poll
while auto_scaling_enabled is set, which the platform always sets (monitor.py
poll_nodegroup_replicas). So a refresh after the resize reads the autoscaler's count again.

What fails the `up` at a node group delete although Magnum goes on: terraform-provider-openstack
v3.4.0 deletes a NodeGroup and waits with Pending [DELETE_IN_PROGRESS], Target [DELETE_COMPLETE],
no Delay (resource_openstack_containerinfra_nodegroup_v1.go Delete), so its first poll comes
right after Magnum's 204; Magnum's delete is a cast (api/controllers/v1/nodegroup.py delete ->
conductor/api.py nodegroup_delete_async), and the status becomes DELETE_IN_PROGRESS only in the
conductor: the conductor sets it unsaved (nodegroup_conductor.py nodegroup_delete);
magnum-cluster-api (driver.py delete_nodegroup) and magnum-capi-helm (driver.py delete_nodegroup)
save it first thing, racing the provider's immediate poll; the Heat driver saves none
(drivers/heat/driver.py delete_nodegroup), the group's status follows its Heat stack only at the
periodic poll (HeatPoller extract_nodegroup_status). A status that is neither pending nor the
target ends the wait (terraform-plugin-sdk v2.38.1 helper/retry/state.go WaitForStateContext:
UnexpectedStateError), so the provider fails the delete with "unexpected state 'CREATE_COMPLETE'"
(terraform-provider-openstack#2066, open, seen on pulumi-openstack 5.4.2): on Heat unless the
periodic poll comes first, on the Cluster API drivers whenever the provider's poll wins, as the
issue shows. Pulumi keeps the group in its state; a delete-first replacement (a named group,
pulumi-terraform-bridge nameRequiresDeleteBeforeReplace) creates nothing. The converse race at
create is a note of the diff and of rehearse's steps, not a failure (day2_hints.py
node_group_create_note): the API casts the create too and only the conductor writes the group's
record (api/controllers/v1/nodegroup.py post -> nodegroup_create_async; nodegroup_conductor.py
nodegroup_create), and the provider's first poll, also without Delay, reads a 404 as
DELETE_COMPLETE (containerinfra_shared_v1.go containerInfraNodeGroupV1StateRefreshFunc), which is
neither CREATE_IN_PROGRESS nor CREATE_COMPLETE; the conductor writes that record before it loads
the driver, so the create loses only to a slow conductor, where every delete on the Cluster API
drivers races the driver's save.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Optional

from inference_platform.settings.errors import format_path
from inference_platform.settings.stack import Settings
from inference_platform.timing.readiness import cluster_upgrade_budget

from .awaits import go_duration_seconds
from .day2_hints import magnum_group_name

# terraform-provider-openstack v3.4.0 resource_openstack_containerinfra_cluster_v1.go Timeouts.
PROVIDER_UPDATE_SECONDS = 30 * 60

MAGNUM_CLUSTER = "openstack:containerinfra/cluster:Cluster"
MAGNUM_TEMPLATE = "openstack:containerinfra/clusterTemplate:ClusterTemplate"
MAGNUM_NODE_GROUP = "openstack:containerinfra/nodeGroup:NodeGroup"


def labels_diff(parent: dict[str, str], labels: dict[str, str]) -> tuple[dict, dict, dict]:
    """Magnum's (overridden, added, skipped) of an object's labels against its parent's
    (magnum api/utils.py get_labels_diff): overridden holds the parent's values."""
    overridden = {k: parent[k] for k, v in labels.items() if k in parent and parent[k] != v}
    added = {k: v for k, v in labels.items() if k not in parent}
    skipped = {k: v for k, v in parent.items() if k not in labels}
    return overridden, added, skipped


def provider_read_labels(stored: dict[str, str], template: dict[str, str], prior: dict[str, str]) -> dict[str, str]:
    """The `labels` terraform-provider-openstack reads back for a cluster with merge_labels
    (containerInfraV1GetLabelsMerged): added, skipped, the cluster's own value of each overridden
    label, then the prior state's labels for keys not yet there."""
    overridden, added, skipped = labels_diff(template, stored)
    merged = {**added, **skipped, **{k: stored[k] for k in overridden}}
    return {**{k: v for k, v in prior.items() if k not in merged}, **merged}


# The statuses magnum stable/2026.1 upgrades a cluster from (conductor/handlers/cluster_conductor.py
# cluster_upgrade: NotSupported otherwise), and the rest of objects/fields.py ClusterStatus.
UPGRADABLE_STATUSES = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "RESUME_COMPLETE", "RESTORE_COMPLETE",
                       "ROLLBACK_COMPLETE", "SNAPSHOT_COMPLETE", "CHECK_COMPLETE", "ADOPT_COMPLETE")
CLUSTER_STATUSES = UPGRADABLE_STATUSES + ("CREATE_IN_PROGRESS", "CREATE_FAILED", "UPDATE_IN_PROGRESS", "UPDATE_FAILED",
                                          "DELETE_IN_PROGRESS", "DELETE_FAILED", "DELETE_COMPLETE", "RESUME_FAILED",
                                          "ROLLBACK_IN_PROGRESS", "ROLLBACK_FAILED")


@dataclass
class Cloud:
    """What Magnum holds for one stack's cluster, as the rehearsal moves it."""

    settings: Settings
    live_nodes: dict[str, int] = field(default_factory=dict)
    """Node count per group as the autoscaler left it (group name -> count)."""
    stored_labels: Optional[dict[str, str]] = None
    template_labels: dict[str, str] = field(default_factory=dict)
    status: str = "CREATE_COMPLETE"
    """The cluster's Magnum status before the edits (UPDATE_FAILED after a node group change that failed, e.g. on quota)."""
    resized: dict[str, int] = field(default_factory=dict)
    """Node count per group an `openstack coe cluster resize` set (group name -> count)."""

    @property
    def driver(self) -> Optional[str]:
        magnum = self.settings.cluster.magnum
        return magnum.node_labeller if self.settings.cluster.mode == "magnum" else None

    def live_count(self, group: str) -> int:
        return self.live_nodes[group]

    def resize(self, counts: dict[str, int]) -> None:
        """`openstack coe cluster resize <cluster> N --nodegroup G` for each group: Magnum's node_count
        becomes N, and stays but on magnum-cluster-api, whose monitor sets it back from the
        MachineDeployment the autoscaler sizes at its next health poll (module docstring)."""
        self.resized.update(counts)
        if self.driver != "magnum-cluster-api":
            self.live_nodes.update(counts)

    def created(self, state: dict[str, Any]) -> None:
        """Magnum after the first `up`: the cluster's labels merged with its template's."""
        cluster, template = _one(state, MAGNUM_CLUSTER), _one(state, MAGNUM_TEMPLATE)
        self.template_labels = dict(_inputs(template).get("labels") or {})
        if cluster is not None:
            own = dict(_inputs(cluster).get("labels") or {})
            merge = _inputs(cluster).get("mergeLabels")
            self.stored_labels = {**self.template_labels, **own} if merge or not own else own

    def refreshed(self, state: dict[str, Any]) -> dict[str, Any]:
        """The state after `pulumi refresh`: what the providers read back, in inputs and outputs."""
        out = copy.deepcopy(state)
        default = self.settings.cluster.node_groups[0].name if self.settings.cluster.mode == "magnum" else None
        for r in out["resources"]:
            if r.get("type") == MAGNUM_CLUSTER and self.stored_labels is not None:
                prior = dict(_inputs(r).get("labels") or {})
                read = provider_read_labels(self.stored_labels, self.template_labels, prior) \
                    if _inputs(r).get("mergeLabels") else dict(self.stored_labels)
                _set_read(r, "labels", read)
                _set_read(r, "nodeCount", self.live_count(default))
            elif r.get("type") == MAGNUM_NODE_GROUP and _inputs(r).get("role") in self.live_nodes:
                _set_read(r, "nodeCount", self.live_count(_inputs(r)["role"]))
        return out

    def upgrade_timeouts(self, new: dict[str, Any]) -> list[str]:
        """A cluster upgrade the provider stops waiting for: the `up` fails while Magnum goes on."""
        budget = cluster_upgrade_budget(self.settings) if self.driver in ("magnum-cluster-api", "magnum-capi-helm") else None
        cluster = _one(new, MAGNUM_CLUSTER)
        if budget is None or cluster is None:
            return []
        custom = (cluster.get("customTimeouts") or {}).get("update")
        wait = go_duration_seconds(custom) if custom else PROVIDER_UPDATE_SECONDS
        if wait >= budget.update_seconds:
            return []
        return [f"terraform-provider-openstack stops waiting for the cluster upgrade after {wait:g}s "
                f"({'customTimeouts.update ' + custom if custom else 'its 30-minute default'}) but it may take "
                f"{budget.update_seconds}s ({budget.basis}): the `up` fails while Magnum goes on; give the Magnum cluster "
                "customTimeouts.update from that (the platform does; a Cluster used alone needs upgrade_seconds), or "
                "after a failure wait for UPDATE_COMPLETE (`openstack coe cluster show <cluster>`), then `pulumi refresh` "
                "and `pulumi up` again"]

    def upgrade_notes(self, old: dict[str, Any], new: dict[str, Any], changes: list) -> list[str]:
        """What a cluster upgrade on magnum-cluster-api needs beyond the GPUs the groups hold now: Cluster
        API replaces a node by surging one first (MachineDeployment default maxSurge 1, maxUnavailable
        0; the driver sets no strategy), one group at a time (cluster_upgrade_budget), so the roll of a
        GPU group runs one node of it above the live counts, which may pass cluster.gpuQuota (the
        cloud's quota refuses the surge server and the roll waits until the provider's update wait
        ends). capi-helm-charts' groups take maxSurge 0; Heat does not upgrade."""
        quota = self.settings.cluster.gpu_quota
        if self.driver != "magnum-cluster-api" or quota is None or not _template_moves(old, new, changes):
            return []
        groups = [g for g in self.settings.cluster.node_groups if g.is_gpu and self.live_nodes.get(g.name, 0) >= 1]
        held = sum(self.live_nodes[g.name] * g.gpu.per_node for g in groups)
        counts = ", ".join(f"{g.name} {self.live_nodes[g.name]}" for g in groups)
        return [f"note: cluster.gpuQuota: the upgrade replaces each node of GPU group {g.name} by starting one more "
                f"first (Cluster API's maxSurge 1), {held + g.gpu.per_node} GPUs with the groups at their live counts "
                f"({counts}), over gpuQuota {quota}: if the cloud's quota is that, it refuses the surge server and the "
                f"upgrade stalls; before it, let the autoscaler take {g.name} below its live count, or raise the quota"
                for g in groups if held + g.gpu.per_node > quota]

    def refusals(self, old: dict[str, Any], new: dict[str, Any], changes: list) -> list[str]:
        """Why Magnum would fail this `up` (one line each, with the way through); [] when it would not."""
        out = []
        if _template_moves(old, new, changes):
            out += self.upgrade_timeouts(new)
        if self.driver != "heat" and self.status not in UPGRADABLE_STATUSES and _template_moves(old, new, changes):
            out.append(f"Magnum refuses the cluster upgrade while the cluster is {self.status} (it upgrades only from "
                       f"{', '.join(UPGRADABLE_STATUSES)}): fix what failed (`openstack coe cluster show <cluster>`, its "
                       f"status_reason, and `openstack coe nodegroup list <cluster>`) until Magnum reports a *_COMPLETE "
                       f"status, then `pulumi up`")
        if self.driver == "heat" and _template_moves(old, new, changes):
            out.append("Magnum refuses the cluster upgrade: the Heat driver supports none (magnum drivers/heat/driver.py "
                       "upgrade_cluster raises NotSupported); keep inference-platform:cluster.magnum.kubernetesVersion "
                       "and template as they are, or move to a Cluster API driver with a new cluster")
        groups = {g.name: i for i, g in enumerate(self.settings.cluster.node_groups)}
        for change in changes:
            if change.type == MAGNUM_NODE_GROUP and change.action in ("delete", "replace"):
                out.append(node_group_delete_failure(change, _by_key(old, change.key)))
            if change.type != MAGNUM_NODE_GROUP or change.action != "update":
                continue
            r = _by_key(new, change.key)
            group = _inputs(r).get("role")
            if group not in self.live_nodes:
                continue
            magnum_name = magnum_group_name(r)
            undone = self.resized.get(group) if self.driver == "magnum-cluster-api" else None
            out += node_bound_refusals(group, groups.get(group), _inputs(r), self.live_count(group), self.settings,
                                       magnum_name, undone)
        return out

    def applied(self, old: dict[str, Any], new: dict[str, Any], changes: list) -> None:
        """Magnum after an `up` that went through: a moved template upgrades the cluster."""
        if self.stored_labels is None or not _template_moves(old, new, changes):
            return
        new_template = dict(_inputs(_one(new, MAGNUM_TEMPLATE)).get("labels") or {})
        if self.driver == "magnum-cluster-api" and "kube_tag" in new_template:
            self.stored_labels["kube_tag"] = new_template["kube_tag"]
        self.template_labels = new_template


def _resize(settings: Settings, count: int, magnum_name: str, verb: str) -> str:
    """How to move a group's live count to `count` before the `up`, on the stack's driver."""
    if settings.cluster.magnum is not None and settings.cluster.magnum.node_labeller == "magnum-cluster-api":
        # A resize leaves the autoscaled MachineDeployment alone, and the driver's monitor copies its
        # replicas back into the group's count on every poll (magnum-cluster-api monitor.py
        # poll_nodegroup_replicas): only the autoscaler moves it.
        return (f"first let the autoscaler {verb} the group to {count} (pods that need its nodes, e.g. "
                f"coldStart.spareSlots), then `pulumi up`: on magnum-cluster-api `openstack coe cluster resize` does not "
                f"stick, the driver's monitor sets the count back from the MachineDeployment")
    return f"first {verb} the group: `openstack coe cluster resize <cluster> {count} --nodegroup {magnum_name}`, then `pulumi up`"


def node_group_delete_failure(change: Any, old: dict[str, Any]) -> str:
    """How the provider fails the delete of a Magnum node group (removed, or replaced), and the way
    through (module docstring: terraform-provider-openstack#2066)."""
    group = magnum_group_name(old)
    if change.action == "delete":
        kept, then = "keeps the group in its state", "`pulumi refresh` (it drops the group) and `pulumi up` again"
    elif change.delete_first:
        kept = "keeps the old group in its state and creates no replacement (the group goes first: it is named)"
        then = "`pulumi refresh` (it drops the old group) and `pulumi up` again, which creates the new one"
    else:
        kept = "keeps the old group in its state, marked for deletion, beside its replacement"
        then = "`pulumi refresh` (it drops the old group) and `pulumi up` again"
    return (f"{change.type} {old.get('name', change.key)}: terraform-provider-openstack v3.4.0 fails the delete of "
            f"Magnum node group {group} with \"Error waiting for openstack_containerinfra_nodegroup_v1 <cluster>/<uuid> "
            f"to become deleted: unexpected state 'CREATE_COMPLETE', wanted target 'DELETE_COMPLETE'\" (its first poll "
            f"reads the status before Magnum's background delete sets DELETE_IN_PROGRESS; "
            f"terraform-provider-openstack#2066) while Magnum goes on deleting it; Pulumi {kept}; wait until "
            f"`openstack coe nodegroup list <cluster>` no longer lists {group}, then {then}")


def node_bound_refusals(group: str, index: Optional[int], inputs: dict[str, Any], live: int,
                        settings: Settings, magnum_name: str, undone: Optional[int] = None) -> list[str]:
    """Magnum's check of a node group update against its live count, as one line per bound it fails;
    `undone`: the count a resize set that magnum-cluster-api's monitor has put back to `live`."""
    out = []
    after = "" if undone is None or undone == live else (
        f" (the resize to {undone} before this step did not stick: magnum-cluster-api's monitor set the count back to "
        f"the MachineDeployment's replicas, {live}, at its next health poll, monitor.py poll_nodegroup_replicas)")
    source = {"cluster": {"nodeGroups": [{"name": g.name} for g in settings.cluster.node_groups]}}
    low, high = inputs.get("minNodeCount"), inputs.get("maxNodeCount")
    where = ("cluster", "nodeGroups", index if index is not None else group)
    if low is not None and low > live:
        out.append(f"{format_path((*where, 'minNodes'), source=source)}: {low} is above the live node count {live} of group "
                   f"{group}{after}; Magnum refuses min_node_count > node_count on update (magnum api/controllers/v1/nodegroup.py "
                   f"_validate_node_count); " + _resize(settings, low, magnum_name, "grow"))
    if high is not None and high < live:
        out.append(f"{format_path((*where, 'maxNodes'), source=source)}: {high} is below the live node count {live} of group "
                   f"{group}{after}; Magnum refuses node_count > max_node_count on update (magnum api/controllers/v1/nodegroup.py "
                   f"_validate_node_count); " + _resize(settings, high, magnum_name, "shrink"))
    return out


def _template_moves(old: dict[str, Any], new: dict[str, Any], changes: list) -> bool:
    """Whether this `up` moves the cluster to another template (Magnum's cluster upgrade)."""
    moved = {c.key for c in changes if c.type == MAGNUM_TEMPLATE and c.action == "replace"}
    for c in changes:
        if c.type == MAGNUM_CLUSTER and c.action == "update" and (
                any(p.startswith("inputs.clusterTemplateId") for p in c.paths)
                or any(k.startswith("inputs.clusterTemplateId") for k in c.unknown)):
            return True
    return bool(moved) and _one(old, MAGNUM_CLUSTER) is not None


def _one(state: dict[str, Any], type_: str) -> Optional[dict[str, Any]]:
    return next((r for r in state["resources"] if r.get("type") == type_), None)


def _by_key(state: dict[str, Any], key: str) -> dict[str, Any]:
    return next(r for r in state["resources"] if r["urn"].split("::", 1)[-1] == key)


def _inputs(r: Optional[dict[str, Any]]) -> dict[str, Any]:
    return (r or {}).get("inputs") or {}


def _set_read(r: dict[str, Any], key: str, value: Any) -> None:
    # The bridge extracts inputs from what it read only for inputs the state holds.
    if key in (r.get("inputs") or {}):
        r["inputs"][key] = value
    r.setdefault("outputs", {})[key] = value
