"""Training's series for the live Prometheus: one TrainJob of two nodes in a team namespace and
its team's ClusterQueue, as kube-state-metrics, DCGM, JobSet's and Kueue's controllers export
them (names and labels from the catalogues: tests/catalogues/kueue.txt, jobset.txt,
kube-state-metrics.txt).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.support.controller_exporter import NAMESPACE, TRAIN_JOB, _labels

if TYPE_CHECKING:
    from tests.support.promstack import Exporter

NODES = 2
# JobSet names a replicated job's Jobs <jobset>-<replicatedJob>-<index> (placement.go GenJobName);
# a Job's pod gets the Job's name, its completion index and a random suffix.
JOBS = [f"{TRAIN_JOB}-node-{i}" for i in range(NODES)]
PODS = [f"{job}-0-x{i}" for i, job in enumerate(JOBS)]
# Where each controller runs: the scrape's namespace label wins, theirs becomes exported_namespace.
KUEUE_NAMESPACE = "kueue-system"
JOBSET_NAMESPACE = "kubeflow-system"


def ksm_series() -> list[str]:
    """The TrainJob's Jobs, owned by its JobSet, each with one running pod."""
    lines = []
    for i, job in enumerate(JOBS):
        ids = {"namespace": NAMESPACE, "job_name": job}
        lines += [
            f"kube_job_owner{_labels(**ids, owner_kind='JobSet', owner_name=TRAIN_JOB, owner_is_controller='true')} 1",
            f"kube_job_status_active{_labels(**ids)} 1",
            f"kube_job_status_succeeded{_labels(**ids)} 0",
            f"kube_job_status_failed{_labels(**ids, reason='BackoffLimitExceeded')} 0",
            f"kube_job_created{_labels(**ids)} {1_780_000_000 + i}",
        ]
    return lines


def dcgm_series(exporter: Exporter) -> list[str]:
    """One GPU per node pod of the TrainJob."""
    lines = []
    for i, pod in enumerate(PODS):
        text = _labels(gpu="0", UUID=f"GPU-train-{i}", Hostname=f"gpu-train-{i}", modelName="NVIDIA H100",
                       container="node", namespace=NAMESPACE, pod=pod)
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{text} {exporter._value('DCGM_FI_DEV_GPU_UTIL', text, 90)}")
    return lines
