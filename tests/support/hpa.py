"""The HorizontalPodAutoscaler's arithmetic for Pods metrics with an AverageValue target, as
kubernetes pkg/controller/podautoscaler/replica_calculator.go (GetMetricReplicas) and
horizontal.go (the largest proposal of all metrics, within min and max) compute it."""

from __future__ import annotations

import math

TOLERANCE = 0.1  # the controller's default --horizontal-pod-autoscaler-tolerance


def metric_replicas(values: list[float], target: float) -> int:
    """Replicas one metric proposes from its per-pod values (every pod ready)."""
    ratio = sum(values) / len(values) / target
    if abs(ratio - 1) <= TOLERANCE:
        return len(values)
    return math.ceil(ratio * len(values))


def desired_replicas(proposals: list[int], min_replicas: int, max_replicas: int) -> int:
    return min(max(max(proposals), min_replicas), max_replicas)
