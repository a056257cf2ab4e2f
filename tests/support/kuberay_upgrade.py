"""What KubeRay v1.7.0's RayService controller does with an edited RayService, ported to read
rendered specs (ray-operator/controllers/ray/rayservice_controller.go at tag v1.7.0:
reconcileRayCluster, shouldUpdateCluster, isClusterSpecHashEqual, shouldPrepareNewCluster,
rayClusterSpecForHashing, checkIfNeedSubmitServeApplications; utils/util.go
GenerateHashWithoutReplicasAndWorkersToDelete).

KubeRay compares SHA-1 hashes of the JSON of the cluster spec with some fields muted; equal
hashes are equal muted specs, so the port compares the muted specs themselves.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass


def _muted(cluster_spec: dict) -> str:
    """GenerateHashWithoutReplicasAndWorkersToDelete over rayClusterSpecForHashing: suspend,
    upgradeStrategy, the head's tolerations and scheduling gates, and each worker group's
    replicas, minReplicas, maxReplicas, workersToDelete, tolerations and scheduling gates."""
    spec = copy.deepcopy(cluster_spec)
    spec.pop("suspend", None)
    spec.pop("upgradeStrategy", None)
    for pod in [spec["headGroupSpec"]["template"]["spec"]] + [g["template"]["spec"] for g in spec.get("workerGroupSpecs", [])]:
        pod.pop("tolerations", None)
        pod.pop("schedulingGates", None)
    for group in spec.get("workerGroupSpecs", []):
        for key in ("replicas", "minReplicas", "maxReplicas"):
            group.pop(key, None)
        group.get("scaleStrategy", {}).pop("workersToDelete", None)
    return json.dumps(spec, sort_keys=True)


@dataclass(frozen=True)
class Reconciled:
    cluster_action: str
    """`keep` the active RayCluster as it is, `update` it in place, or start a `new` one."""
    serve_config_submitted: bool
    """Whether the (new) serveConfigV2 is put to the serving cluster's dashboard."""
    cluster_spec: dict
    """The spec of the RayCluster that serves once the controller is done."""


def reconcile(applied: dict, edited: dict) -> Reconciled:
    """The RayService spec `applied` made the active cluster, and the user applies `edited`."""
    old, new = applied["rayClusterConfig"], edited["rayClusterConfig"]
    if _muted(old) == _muted(new):
        action = "keep"
    else:
        # The partial compare: only worker groups appended at the end update the cluster in place.
        kept = {**new, "workerGroupSpecs": new.get("workerGroupSpecs", [])[:len(old.get("workerGroupSpecs", []))]}
        if len(new.get("workerGroupSpecs", [])) >= len(old.get("workerGroupSpecs", [])) and _muted(old) == _muted(kept):
            action = "update"
        elif (edited.get("upgradeStrategy") or {}).get("type", "NewCluster") != "None":
            action = "new"
        else:
            action = "keep"  # upgradeStrategy None: the cluster is never replaced
    if action == "keep":
        # The cached serveConfigV2 of the active cluster against the new one.
        return Reconciled(action, applied["serveConfigV2"] != edited["serveConfigV2"], old)
    # modifyRayCluster copies the whole goal spec; a new cluster starts from it and gets the config.
    return Reconciled(action, True, new)


def status(generation: int, active: str, pending: str = "") -> dict:
    """The status KubeRay v1.7.0 writes at the end of a reconcile of `generation`, in one update
    (rayservice_controller.go calculateStatus: observedGeneration; calculateConditions:
    UpgradeInProgress True while a pending RayCluster exists beside the active one, False once
    the pending one is promoted or none is needed)."""
    upgrading = bool(active and pending)
    return {"observedGeneration": generation, "activeServiceStatus": {"rayClusterName": active},
            "pendingServiceStatus": {"rayClusterName": pending},
            "conditions": [{"type": "UpgradeInProgress", "status": "True" if upgrading else "False"}]}


def wait_satisfied(wait_for: str, obj: dict) -> bool:
    """pulumi-kubernetes' wait on `pulumi.com/waitFor` for the one form the platform writes,
    `jsonpath={.status.conditions[?(@.type=="T")].status}=V` (provider/pkg/await/condition/
    jsonpath.go: an observedGeneration behind metadata.generation is not yet satisfied;
    provider/pkg/jsonpath/jsonpath.go Matches: the first selected value, as a string)."""
    import re

    m = re.fullmatch(r'jsonpath=\{\.status\.conditions\[\?\(@\.type=="([^"]+)"\)\]\.status\}=(\w+)', wait_for)
    if m is None:
        raise ValueError(f"not the platform's form of waitFor: {wait_for}")
    st = obj.get("status") or {}
    if "observedGeneration" in st and st["observedGeneration"] < obj["metadata"]["generation"]:
        return False
    found = [c["status"] for c in st.get("conditions", []) if c.get("type") == m.group(1)]
    return bool(found) and found[0] == m.group(2)
