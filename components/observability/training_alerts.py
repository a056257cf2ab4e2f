"""Alerts about training (issue: training beside serving): jobs that fail or keep restarting,
and team queues whose work Kueue does not admit.

Names and labels as the controllers export them (tests/catalogues/kueue.txt and jobset.txt name
the source files; kube-state-metrics' job series in kube-state-metrics.txt):

- A TrainJob runs as a JobSet of the same name (kubeflow/trainer v2.3.0
  pkg/runtime/framework/plugins/jobset/jobset.go), whose child Jobs kube-state-metrics ties to
  it through `kube_job_owner{owner_kind="JobSet"}`. When the JobSet restarts after a failure
  it deletes its Jobs of the previous attempt and creates them again under the same names
  (jobset v0.12.0 pkg/controllers/jobset_controller.go deleteJobs, `<jobset>-<replicatedJob>-<index>`
  from pkg/util/placement/placement.go GenJobName), so a restart is a change of
  `kube_job_created` under the same `job_name`.
- JobSet's controller counts JobSets that failed for good in `jobset_failed_total`; its
  `namespace` label names the JobSet's namespace, which the scrape keeps as `exported_namespace`
  (the target's own namespace label wins, honorLabels being off).
- Kueue reports per ClusterQueue the workloads it holds back (`kueue_pending_workloads`, status
  `inadmissible` once an admission attempt failed) and the ones it admits.
"""

from __future__ import annotations

from typing import Any

from inference_platform.observability.alert_rule import alert

TRAIN_JOB_LABEL = "train_job"
# Restarts of one TrainJob within an hour that page: the runtime's JobSet restarts it after each
# failure up to its maxRestarts; two in an hour is a job failing for a reason that persists.
RESTARTS_PER_HOUR = 2
PENDING_FOR = "30m"


def _regex(names: list[str]) -> str:
    return "|".join(sorted(set(names)))


def _by_train_job(expr: str, namespaces: list[str]) -> str:
    """`expr` (per Job: namespace, job_name) at its worst per owning JobSet, named `train_job`."""
    owner = f'kube_job_owner{{namespace=~"{_regex(namespaces)}",owner_kind="JobSet"}}'
    joined = f"({expr}) * on (namespace, job_name) group_left (owner_name) {owner}"
    return f'max by (namespace, {TRAIN_JOB_LABEL}) (label_replace({joined}, "{TRAIN_JOB_LABEL}", "$1", "owner_name", "(.+)"))'


def restarts_expr(namespaces: list[str], restarts: int = RESTARTS_PER_HOUR) -> str:
    """Times a TrainJob's Jobs were created again within the hour (its JobSet's restarts)."""
    created = f'changes(kube_job_created{{namespace=~"{_regex(namespaces)}"}}[1h])'
    return f"{_by_train_job(created, namespaces)} >= {restarts}"


def failed_expr(namespaces: list[str]) -> str:
    """A TrainJob whose JobSet failed for good (restarts used up, or a failure policy said so).

    JobSet's controller creates a JobSet's `jobset_failed_total` series with its first failure,
    already at 1 (jobset v0.12.0 pkg/metrics/metrics.go JobSetFailed: `WithLabelValues(...).Inc()`),
    so there is no 0 sample for `increase` to rise from: a series that appeared within the window
    is a failure too, beside a series that rose (a JobSet of the same name that failed again)."""
    series = f'jobset_failed_total{{exported_namespace=~"{_regex(namespaces)}"}}'
    failed = f'(increase({series}[10m]) > 0) or ({series} unless {series} offset 10m)'
    named = f'label_replace({failed}, "namespace", "$1", "exported_namespace", "(.+)")'
    return f'max by (namespace, {TRAIN_JOB_LABEL}) (label_replace({named}, "{TRAIN_JOB_LABEL}", "$1", "jobset_name", "(.+)"))'


def inadmissible_expr(cluster_queues: list[str]) -> str:
    """Workloads Kueue tried and failed to admit: more than the queue's quota and what it may
    borrow, or no flavor whose nodes fit."""
    return (f'sum by (cluster_queue) (kueue_pending_workloads{{cluster_queue=~"{_regex(cluster_queues)}",'
            f'status="inadmissible"}}) > 0')


def stalled_expr(cluster_queues: list[str]) -> str:
    """Work waits in the queue and none was admitted for an hour."""
    queues = _regex(cluster_queues)
    pending = f'sum by (cluster_queue) (kueue_pending_workloads{{cluster_queue=~"{queues}",status="active"}}) > 0'
    admitted = f'sum by (cluster_queue) (increase(kueue_admitted_workloads_total{{cluster_queue=~"{queues}"}}[1h])) > 0'
    return f"{pending} unless on (cluster_queue) ({admitted})"


def training_rules(namespaces: list[str], cluster_queues: list[str]) -> list[dict[str, Any]]:
    """The training alert group's rules for the teams' namespaces and ClusterQueues."""
    if not namespaces:
        return []
    return [
        alert("TrainJobFailed", failed_expr(namespaces), "0m", "warning",
              "TrainJob {{ $labels.train_job }} in {{ $labels.namespace }} failed: its JobSet used up its restarts "
              "(see `kubectl describe trainjob` and its node pods' logs)"),
        alert("TrainJobRestarting", restarts_expr(namespaces), "0m", "warning",
              "TrainJob {{ $labels.train_job }} in {{ $labels.namespace }} restarted {{ $value }} times in the last hour "
              "(a node pod keeps failing: see its logs and the node's GPU faults)"),
        alert("TrainingWorkloadsInadmissible", inadmissible_expr(cluster_queues), PENDING_FOR, "warning",
              "ClusterQueue {{ $labels.cluster_queue }} holds {{ $value }} training workloads Kueue cannot admit "
              "(more than its quota and what it may borrow, or no flavor fits: `kubectl describe workload`)"),
        alert("TrainingQueueStalled", stalled_expr(cluster_queues), "1h", "warning",
              "ClusterQueue {{ $labels.cluster_queue }} has training workloads waiting and admitted none for an hour "
              "(its quota is in use, or borrowed by serving and other teams)"),
    ]
