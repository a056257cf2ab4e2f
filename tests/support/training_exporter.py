"""Training's series for the live Prometheus: one TrainJob of two nodes in a team namespace and
its team's ClusterQueue, as kube-state-metrics, DCGM, JobSet's and Kueue's controllers export
them (names and labels from the catalogues: tests/catalogues/kueue.txt, jobset.txt,
kube-state-metrics.txt).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.support.metric_catalogue import CATALOGUES, families

if TYPE_CHECKING:
    from tests.support.promstack import Exporter

NAMESPACE = "team-vision"
CLUSTER_QUEUE = "vision"
TRAIN_JOB = "ddp"
NODES = 2
# JobSet names a replicated job's Jobs <jobset>-<replicatedJob>-<index> (placement.go GenJobName);
# a Job's pod gets the Job's name, its completion index and a random suffix.
JOBS = [f"{TRAIN_JOB}-node-{i}" for i in range(NODES)]
PODS = [f"{job}-0-x{i}" for i, job in enumerate(JOBS)]
# Where each controller runs: the scrape's namespace label wins, theirs becomes exported_namespace.
KUEUE_NAMESPACE = "kueue-system"
JOBSET_NAMESPACE = "kubeflow-system"
# Values of the labels the catalogues list without values.
_DEFAULTS = {"cluster_queue": CLUSTER_QUEUE, "preempting_cluster_queue": CLUSTER_QUEUE, "cohort": "gpu", "flavor": "gpu",
             "resource": "nvidia.com/gpu", "replica_role": "standalone", "priority_class": "training",
             "underlying_cause": "", "jobset_name": TRAIN_JOB, "exported_namespace": NAMESPACE}


def _labels(**labels: Any) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def controller_series(exporter: Exporter, catalogue_file: str) -> list[str]:
    """Every family of a controller's catalogue, once per value of its category label."""
    lines = []
    for family in families((CATALOGUES / catalogue_file).read_text()):
        names = [n for n in family.labels if n not in {"status", "reason"}]
        base = {("namespace" if n == "exported_namespace" else n): _DEFAULTS[n] for n in names}
        category = next((n for n in family.labels if n in {"status", "reason"}), None)
        for value in (family.values or ("Preempted",)) if category else (None,):
            labels = {**base, **({category: value} if category else {})}
            text = _labels(**labels)
            step = 4 if family.name.endswith("_usage") else 2
            lines.append(f"{family.name}{text} {exporter._value(family.name, text, step)}")
    return lines


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
