"""What Cluster takes: its settings and the names it consumes (components/args.py is generated
from this model and its docstrings)."""

from __future__ import annotations

from typing import Optional

from pydantic import Field, SecretStr

from inference_platform.gpu.profiles import default_worker_group_problems
from inference_platform.settings.base import Model
from inference_platform.settings.checks import cluster_node_group_problems, gpu_quota_problems
from inference_platform.settings.cluster import ClusterSettings, cluster_problems
from inference_platform.settings.errors import KeyPath


class ClusterInputs(Model):
    """A Magnum cluster with its node groups, or an existing cluster, and the Kubernetes provider for it."""

    cluster: ClusterSettings
    """The cluster and its node groups (the stack file's `cluster`)."""
    production: bool = False
    """Protect the Magnum cluster and its node groups from deletion."""
    kubeconfig: Optional[SecretStr] = None
    """Secret. kubeconfig of an existing cluster (mode `existing`); without it, the ambient kubeconfig."""
    gpu_node_ready_seconds: int = Field(default=300, ge=0, le=14400)
    """Seconds from a new VM to a GPU node that advertises its GPUs (boot, then the driver): how long the autoscaler waits for a node it asked for."""

    upgrade_seconds: Optional[int] = Field(default=None, ge=0, le=604800)
    """Seconds a move of the Magnum cluster to a new template may take (every node replaced in turn; timing/readiness.py cluster_upgrade_budget): the update wait, with headroom. None: the provider's (30 minutes)."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """The stack file's checks of the cluster section, for the component used alone."""
        return (cluster_problems(self.cluster) + cluster_node_group_problems(self.cluster) + gpu_quota_problems(self.cluster)
                + default_worker_group_problems(self.cluster))
