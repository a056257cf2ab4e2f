"""`training`: the training side of the GPU groups (docs/training-quotas.md)."""

from __future__ import annotations

from pydantic import Field

from inference_platform.settings.base import Model
from inference_platform.settings.training_teams import TopologyLevels, TrainingTeam


class TrainingSettings(Model):
    teams: list[TrainingTeam] = Field(default=[], max_length=50)
    """Teams that train on the GPU groups: their namespaces, Kueue queues and guaranteed GPUs."""
    topology_levels: TopologyLevels = []
    """Node labels of the cluster's network topology, widest first (e.g. `topology.kubernetes.io/zone`, then `kubernetes.io/hostname`): Kueue places a job's pods close together along them (topology-aware scheduling); empty: no topology."""
