"""Series of the controllers whose metrics the catalogues list (tests/catalogues: Kueue, JobSet,
the llm-d router's endpoint pickers), for the live Prometheus: every family once per value of its
category label, every other label at a value the dashboards' queries select.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.support.metric_catalogue import CATALOGUES, families

if TYPE_CHECKING:
    from tests.support.promstack import Exporter

NAMESPACE = "team-vision"
CLUSTER_QUEUE = "vision"
TRAIN_JOB = "ddp"
# Values of the labels the catalogues list without values. An endpoint picker's pool is named
# after its release, <service>-<version>.
_DEFAULTS = {"cluster_queue": CLUSTER_QUEUE, "preempting_cluster_queue": CLUSTER_QUEUE, "cohort": "gpu", "flavor": "gpu",
             "resource": "nvidia.com/gpu", "replica_role": "standalone", "priority_class": "training",
             "underlying_cause": "", "jobset_name": TRAIN_JOB, "exported_namespace": NAMESPACE,
             "name": "chat-v1", "model_name": "llama", "target_model_name": "llama", "priority": "0",
             "error_code": "Internal", "source_type": "metrics-data-source"}
_CATEGORIES = {"status", "reason"}
_BUCKETS = ("0.001", "0.01", "0.1", "+Inf")


def _labels(**labels: Any) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def controller_series(exporter: Exporter, catalogue_file: str) -> list[str]:
    """Every family of a controller's catalogue, once per value of its category label (a
    histogram once per bucket)."""
    lines = []
    for family in families((CATALOGUES / catalogue_file).read_text()):
        names = [n for n in family.labels if n not in _CATEGORIES | {"le"}]
        base = {("namespace" if n == "exported_namespace" else n): _DEFAULTS[n] for n in names}
        category = next((n for n in family.labels if n in _CATEGORIES), None)
        values = (family.values or ("Preempted",)) if category else (None,)
        buckets = _BUCKETS if "le" in family.labels else (None,)
        for value in values:
            for le in buckets:
                labels = {**base, **({category: value} if category else {}), **({"le": le} if le else {})}
                text = _labels(**labels)
                step = 4 if family.name.endswith("_usage") else 2
                lines.append(f"{family.name}{text} {exporter._value(family.name, text, step)}")
    return lines
