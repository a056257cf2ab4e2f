"""GPUs in a team namespace only for the training pods' PriorityClass.

Kueue manages the training kinds only (training/kueue.py), so a Pod, Job or Deployment a team
creates by hand would run unqueued, at the default priority 0, level with serving, which could
then not preempt it, and outside the serving-first proof. A ResourceQuota in each team namespace
allows no GPU to a pod of any other PriorityClass: its scope PriorityClass NotIn [<class>] also
counts a pod with no class (kubernetes pkg/quota/v1/evaluator/core/pods.go podMatchesSelector
matches the selector against an empty label set then), and the quota admission plugin refuses a
pod whose requests exceed a hard 0. Quota keys of extended resources take the `requests.` prefix.
A pod with the class runs below serving, which preempts it.
"""

from __future__ import annotations

from typing import Any, Sequence

from inference_platform.gpu.profiles import WHOLE_GPU, slots_per_node
from inference_platform.settings.cluster import NodeGroup

QUOTA_NAME = "gpus-for-training-pods-only"


def gpu_resources(groups: Sequence[NodeGroup]) -> list[str]:
    """Every GPU resource a pod may request on the groups (whole GPUs always: a node of any GPU
    group may advertise them, and a pod may ask for them whatever the groups' sharing)."""
    return sorted({WHOLE_GPU, *(r for g in groups if g.gpu is not None for r in slots_per_node(g))})


def gpu_quota_spec(groups: Sequence[NodeGroup], priority_class: str) -> dict[str, Any]:
    return {"hard": {f"requests.{r}": "0" for r in gpu_resources(groups)},
            "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "NotIn", "values": [priority_class]}]}}
