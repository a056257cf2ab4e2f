"""The cold-start estimate: the stages a new Triton replica passes on each GPU group.

Plain data from configured stage times (not a measurement). The platform computes it
once per stack and hands each component the groups it needs: rollout waits, Helm
waits for DaemonSets on GPU nodes and the plan's cold-start table all read it.
"""

from __future__ import annotations

from pydantic import Field

from .config import Model, Text


class Stage(Model):
    """One stage of a replica's start."""

    name: Text
    """Stage name: node boot, driver install, image pull, weight fetch, model load, preempt spare."""
    seconds: int = Field(ge=0, le=86400)
    """Seconds the stage takes."""
    note: str = ""
    """Why the stage is removed, overlapped or longer than configured."""


class GroupEstimate(Model):
    """How long a new replica takes to start on one GPU group."""

    group: Text
    """The GPU node group."""
    spare_slots: int = Field(default=0, ge=0)
    """Spare slots held on the group."""
    new_node: list[Stage]
    """Stages when the replica needs a new node (no spare slot left)."""
    spare: list[Stage]
    """Stages when the replica preempts a placeholder."""

    @property
    def without_spare_seconds(self) -> int:
        return sum(s.seconds for s in self.new_node)

    @property
    def with_spare_seconds(self) -> int:
        return sum(s.seconds for s in self.spare)
