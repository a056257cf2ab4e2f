"""`training.teams`: who trains on the platform's GPU groups, and in which namespace."""

from __future__ import annotations

from inference_platform.settings.base import DnsLabel, Model, ShortName


class TrainingTeam(Model):
    name: ShortName
    """Team name (DNS label); a TrainJob names its team, and the team's Kueue LocalQueue is named after it."""
    namespace: DnsLabel
    """Namespace of the team's TrainJobs (created by the platform unless a service lives there already)."""
