"""InferencePlatform: composes the platform's parts in dependency order.

This is the only module that knows the order in which parts are built:
cluster -> (kubernetes Provider) -> mesh -> observability -> GPU stack ->
inference namespaces -> weight caches -> Triton services. Build order only makes
handles available; `pulumi up` orders by the dependencies the handles carry (the GPU
operator after the monitoring CRDs, inference namespaces after istiod), which
platformctl/ordering.py checks on every plan.
"""

from __future__ import annotations

from typing import Optional

import pulumi

from .cluster import Cluster
from .coldstart import ColdStart
from .config import ConfigError, Settings
from .gpu import GpuOperator
from .mesh import Mesh
from .namespaces import InferenceNamespaces
from .observability import Observability
from .triton import TritonContext, TritonService, deployment_name_clashes
from .weights import WeightCaches


class InferencePlatform(pulumi.ComponentResource):
    """The whole platform of one stack."""

    def __init__(self, name: str, settings: Settings, opts: Optional[pulumi.ResourceOptions] = None):
        # Checked before any resource exists: a fixed Deployment name must be free.
        clashes = deployment_name_clashes(settings.services)
        if clashes:
            raise ConfigError(f"stacks/Pulumi.{pulumi.get_stack()}.yaml", clashes)
        super().__init__("inference-platform:platform:InferencePlatform", name, None, opts)
        self.settings = settings
        child = pulumi.ResourceOptions(parent=self)
        self.outputs: dict[str, pulumi.Input] = {}
        self.cluster = Cluster(f"{name}-cluster", settings, opts=child)
        cluster = self.cluster.handle
        self.kubeconfig = cluster.kubeconfig
        if self.kubeconfig is not None:
            self.outputs["kubeconfig"] = self.kubeconfig
        # Mesh (mesh.py)
        self.mesh = Mesh(f"{name}-mesh", settings, cluster, opts=child).handle
        # Observability (observability.py)
        self.observability = Observability(f"{name}-observability", settings, cluster, self.mesh, opts=child).handle
        self.outputs["urls"] = self.observability.urls
        if self.observability.ui_urls:
            # What a browser opens: the UIs served through the ingress gateway (`ui` settings).
            self.outputs["uiUrls"] = self.observability.ui_urls
        if self.observability.grafana_admin_password is not None:
            self.outputs["grafanaAdminPassword"] = self.observability.grafana_admin_password
        # GPU stack (gpu.py, coldstart.py): the operator after the ServiceMonitor CRD it uses.
        self.gpu_operator = (
            GpuOperator(f"{name}-gpu", settings, cluster, monitor_crds=self.observability.crds, opts=child)
            if settings.gpu_operator.enabled else None
        )
        self.cold_start = ColdStart(f"{name}-coldstart", settings, cluster, opts=child) if settings.gpu_groups else None
        # Inference namespaces (namespaces.py): after istiod, so every pod in them is injected.
        self.namespaces = InferenceNamespaces(
            f"{name}-namespaces", settings, cluster.provider, self.mesh.crds, injector=self.mesh.injector, opts=child
        )
        # Weight caches (weights.py)
        self.weights = WeightCaches(f"{name}-weights", settings, cluster, self.namespaces.namespaces, opts=child)
        # Triton services (triton.py)
        self.services: dict[str, TritonService] = {}
        for svc in settings.services:
            ctx = TritonContext(
                provider=cluster.provider,
                namespace=self.namespaces.namespaces[svc.k8s_namespace],
                gateway=self.mesh.gateway,
                ingress_namespace=self.mesh.ingress_namespace,
                ingress_principal=self.mesh.ingress_principal,
                monitoring_namespace=self.observability.namespace,
                tls=settings.mesh.tls.enabled,
                mesh_crds=self.mesh.crds,
                monitor_crds=self.observability.crds,
                weights=self.weights.handle,
                gpu_operator=self.gpu_operator.release if self.gpu_operator else None,
            )
            self.services[svc.name] = TritonService(svc.name, svc, settings, ctx, opts=child)
        self.outputs["services"] = {
            svc_name: {"urls": t.urls, "weights": t.weights, "authSecret": t.auth_secret, "credentials": t.credentials}
            for svc_name, t in self.services.items()
        }
        self.register_outputs(self.outputs)
