"""Edits that kill a running TrainJob, job by job: an error where the job refuses it (a production
stack's job without restartOnEdit, its TrainJob's annotation components/training/jobs.py), a note
otherwise. The offline plan cannot see whether a job runs, so every job counts as running.

- A replaced TrainJob (its own keys, or its group's networks, selector, taints or claim, which
  reach its spec.trainer.env and runtimePatches: Trainer makes them immutable) is deleted first,
  pods and all, and runs again from the start.
- An updated ClusterTrainingRuntime evicts the jobs running from it when the edit changes what
  Kueue compares: kueue v0.19.2 pkg/controller/jobs/trainjob/trainjob_controller.go builds a job's
  pod sets from the live runtime (getRuntimeSpec), pkg/controller/jobframework/reconciler.go
  EquivalentToWorkload compares them with the running Workload's (pkg/util/equality/podset.go: pod
  counts, containers, init containers; tolerations not once admitted), and a job with no matching
  Workload is stopped ("job with no matching workload, suspending"): its pods are deleted, it is
  requeued and starts again. Trainer v2.3.0 builds the job's JobSet from the copy of the runtime it
  took at the job's first start (pkg/runtime/core/clustertrainingruntime.go NewObjects,
  snapshot.go), so the restarted job still runs the old runtime.
"""

from __future__ import annotations

from typing import Any

from inference_platform.training.jobs import CHECKPOINT_ANNOTATION, RESTART_ANNOTATION, RESTART_REFUSED

TRAINJOB = "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"
RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"


def _meta(resource: dict[str, Any]) -> dict[str, Any]:
    return (resource.get("inputs") or {}).get("metadata") or {}


def _runtime_ref(job: dict[str, Any]) -> str:
    return (((job.get("inputs") or {}).get("spec") or {}).get("runtimeRef") or {}).get("name", "")


def _comes_back(job: dict[str, Any]) -> str:
    place = (_meta(job).get("annotations") or {}).get(CHECKPOINT_ANNOTATION)
    if place is None:
        return "it starts again from zero (it has no checkpoint)"
    return f"it starts again from its last checkpoint in {place} on the file share, if its code loads it, else from zero"


def _finding(job: dict[str, Any], what: str) -> tuple[bool, str]:
    meta = _meta(job)
    refused = (meta.get("annotations") or {}).get(RESTART_ANNOTATION) == RESTART_REFUSED
    name = meta.get("name", job.get("name", ""))
    text = f"TrainJob {meta.get('namespace', '')}/{name}: {what}; {_comes_back(job)}"
    if refused:
        text += (f"; refused in a production stack: accept it with inference-platform:training.jobs[{name}].restartOnEdit: "
                 f"true, or make the edit once the job has finished (kubectl get trainjob -n {meta.get('namespace', '')} {name})")
    return refused, text


def _pod_sets(runtime: dict[str, Any]) -> dict[str, Any]:
    """What of a runtime Kueue compares with a running Workload, by replicated job (and the ML policy,
    from which Trainer fills the node container's environment)."""
    spec = (runtime.get("inputs") or {}).get("spec") or {}
    out: dict[str, Any] = {"ML policy": spec.get("mlPolicy")}
    for rjob in ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []:
        job = (rjob.get("template") or {}).get("spec") or {}
        pod = (job.get("template") or {}).get("spec") or {}
        out[f"{rjob.get('name')} pods"] = (rjob.get("replicas", 1), job.get("parallelism"), job.get("completions"),
                                           pod.get("containers"), pod.get("initContainers"))
    return out


def _evicting_change(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    before, after = _pod_sets(old), _pod_sets(new)
    return [k for k in dict.fromkeys([*before, *after]) if before.get(k) != after.get(k)]


def running_job_findings(changes, ra: dict[str, dict[str, Any]], rb: dict[str, dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(errors, notes): one per TrainJob an edit kills while it runs."""
    found: list[tuple[bool, str]] = []
    action = {c.key: c.action for c in changes}
    for c in changes:
        if c.type == TRAINJOB and c.action == "replace":
            found.append(_finding(rb[c.key], f"replaced ({c.reason}), it is deleted with its pods first, so a running job is killed"))
        elif c.type == RUNTIME and c.action == "update":
            evicting = _evicting_change(ra[c.key], rb[c.key])
            runtime = _meta(rb[c.key]).get("name", "")
            if not evicting:
                continue
            for key, job in rb.items():
                if (job.get("type") == TRAINJOB and key in ra and action.get(key, "same") in ("same", "update")
                        and _runtime_ref(job) == runtime == _runtime_ref(ra[key])):
                    found.append(_finding(job, (
                        f"the update of its ClusterTrainingRuntime {runtime} changes the {', '.join(evicting)}, which Kueue "
                        "compares with the running job's Workload, so it evicts a running job (its pods are deleted, it "
                        "is requeued, and it runs the runtime it started with until it is created again)")))
    errors = [f"error: {text}" for refused, text in found if refused]
    notes = [f"note: {text}" for refused, text in found if not refused]
    return errors, notes
