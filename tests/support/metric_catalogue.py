"""The metric names the platform's exporters really emit, and a PromQL name extractor.

Triton, DCGM and Istio names come from ../shared/reference/metrics; the few
kube-state-metrics names, Triton's latency histogram, the LLM backends' metrics, Ray
Serve's, Kueue's and JobSet's come from tests/catalogues (each file's header names its source: repository, tag, file).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.conformance import reference_dir

CATALOGUES = Path(__file__).resolve().parents[1] / "catalogues"
# tests/catalogues files beyond kube-state-metrics: catalogue source -> file.
LLM_CATALOGUES = {
    "triton-histograms": "triton-histograms.txt",
    "tensorrtllm": "tensorrtllm-backend.txt",
    "vllm": "vllm-backend.txt",
}
# Ray Serve's metrics, as the Ray pods of a graph (placement ray) export them.
RAY_SERVE_CATALOGUE = "ray-serve.txt"
# The training controllers' own metrics: Kueue's queues and JobSet's terminal states.
TRAINING_CATALOGUES = {"kueue": "kueue.txt", "jobset": "jobset.txt"}
# The llm-d router's endpoint pickers, in front of the LLM versions' InferencePools.
ENDPOINT_PICKER_CATALOGUE = "llm-d-router-epp.txt"
# Series Prometheus itself synthesises for every target.
PROMETHEUS_BUILTIN = frozenset({"up"})

_KEYWORDS = frozenset({"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"})


def _table(text: str) -> dict[str, str]:
    """`name type ...` lines (comments skipped) -> {name: type}."""
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            name, typ = line.split()[:2]
            out[name] = typ
    return out


@dataclass(frozen=True)
class Family:
    """One catalogue line: `name type {labels} [v1|v2...]`, the last being the values of
    the family's own category label (the one besides model, version and le)."""

    name: str
    type: str
    labels: tuple[str, ...]
    values: tuple[str, ...] = ()


def families(text: str) -> list[Family]:
    out = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            name, typ, labels, *rest = line.split()
            values = tuple(rest[0].split("|")) if rest else ()
            out.append(Family(name, typ, tuple(labels.strip("{}").split(",")), values))
    return out


@functools.cache
def llm_families(source: str) -> list[Family]:
    return families((CATALOGUES / LLM_CATALOGUES[source]).read_text())


@functools.cache
def ray_serve_families() -> list[Family]:
    return families((CATALOGUES / RAY_SERVE_CATALOGUE).read_text())


def _with_histogram_series(table: dict[str, str]) -> dict[str, str]:
    """A histogram's `_bucket` line also stands for its `_sum` and `_count` counters."""
    out = {}
    for name, typ in table.items():
        if typ == "histogram":
            base = name.removesuffix("_bucket")
            out.update({f"{base}_bucket": "histogram", f"{base}_sum": "counter", f"{base}_count": "counter"})
        else:
            out[name] = typ
    return out


@functools.cache
def catalogue() -> dict[str, dict[str, str]]:
    """source -> {metric name: type}; histograms are listed with their _bucket, _sum and _count series."""
    ref = reference_dir() / "metrics"
    dcgm = {}
    for line in (ref / "dcgm-exporter-default-counters.csv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, typ = (p.strip() for p in line.split(",")[:2])
            if typ != "label":  # label fields appear as labels, not series
                dcgm[name] = typ
    return {
        "triton": _table((ref / "triton.txt").read_text()),
        "dcgm": dcgm,
        "istio": _with_histogram_series(_table((ref / "istio.txt").read_text())),
        "kube-state-metrics": _table((CATALOGUES / "kube-state-metrics.txt").read_text()),
        **{source: _with_histogram_series({f.name: f.type for f in llm_families(source)}) for source in LLM_CATALOGUES},
        "ray-serve": _with_histogram_series({f.name: f.type for f in ray_serve_families()}),
        **{source: _table((CATALOGUES / file).read_text()) for source, file in TRAINING_CATALOGUES.items()},
        "endpoint-picker": _with_histogram_series(_table((CATALOGUES / ENDPOINT_PICKER_CATALOGUE).read_text())),
    }


def known_metrics() -> set[str]:
    return {name for names in catalogue().values() for name in names} | set(PROMETHEUS_BUILTIN)


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects (function, keyword and label names excluded)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for m in re.finditer(r"(?<![\w.$])([A-Za-z_:][A-Za-z0-9_:]*)\s*(\()?", s):
        name, call = m.group(1), m.group(2)
        if not call and name not in _KEYWORDS and not re.fullmatch(r"(?i)inf|nan", name):
            names.add(name)
    return names
