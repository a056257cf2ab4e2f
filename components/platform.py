"""InferencePlatform: composes the platform's parts in dependency order.

This is the only module that knows the order in which parts are built:
cluster -> (kubernetes Provider) -> GPU stack -> mesh -> observability ->
weight caches -> Triton services.
"""

from __future__ import annotations

from typing import Optional

import pulumi

from .cluster import Cluster
from .coldstart import ColdStart
from .config import Settings
from .gpu import GpuOperator
from .mesh import Mesh
from .observability import Observability
from .weights import WeightCaches


class InferencePlatform(pulumi.ComponentResource):
    """The whole platform of one stack."""

    def __init__(self, name: str, settings: Settings, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("inference-platform:platform:InferencePlatform", name, None, opts)
        self.settings = settings
        child = pulumi.ResourceOptions(parent=self)
        self.outputs: dict[str, pulumi.Input] = {}
        self.cluster = Cluster(f"{name}-cluster", settings, opts=child)
        cluster = self.cluster.handle
        self.kubeconfig = cluster.kubeconfig
        # GPU stack (gpu.py, coldstart.py)
        self.gpu_operator = (
            GpuOperator(f"{name}-gpu", settings, cluster, opts=child) if settings.gpu_operator.enabled else None
        )
        self.cold_start = ColdStart(f"{name}-coldstart", settings, cluster, opts=child) if settings.gpu_groups else None
        # Mesh (mesh.py)
        self.mesh = Mesh(f"{name}-mesh", settings, cluster, opts=child).handle
        # Observability (observability.py)
        self.observability = Observability(f"{name}-observability", settings, cluster, self.mesh, opts=child).handle
        self.outputs["urls"] = self.observability.urls
        if self.observability.grafana_admin_password is not None:
            self.outputs["grafanaAdminPassword"] = self.observability.grafana_admin_password
        # Inference namespaces (namespaces.py)
        # Weight caches (weights.py)
        # Inference namespaces are not built before this point yet: nothing to wait for.
        self.weights = WeightCaches(f"{name}-weights", settings, cluster, {}, opts=child)
        # Triton services (triton.py)
        self.register_outputs({"kubeconfig": self.kubeconfig} if self.kubeconfig is not None else {})
