"""Inference namespaces: one per distinct service namespace, shared by the services in it.

Services may share a namespace, so namespaces (and what applies to a whole namespace:
sidecar injection, STRICT mTLS) are created here once, after istiod and before weight
caches and Triton services place objects in them.
"""

from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from .common import resource_opts, standard_labels
from .config import Settings


class InferenceNamespaces(pulumi.ComponentResource):
    """Namespaces of the Triton services, labelled for Istio sidecar injection."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        provider: k8s.Provider,
        mesh_crds: Optional[pulumi.Resource] = None,
        injector: Optional[pulumi.Resource] = None,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("inference-platform:namespaces:InferenceNamespaces", name, None, opts)
        # The injection label takes effect only once istiod's webhook runs: a namespace
        # created after it gives every workload placed in it (which depends on its
        # namespace) a sidecar from the first pod on.
        after_injector = [injector] if injector is not None else []
        self.namespaces: dict[str, k8s.core.v1.Namespace] = {}
        for ns in sorted({s.k8s_namespace for s in settings.services}):
            namespace = k8s.core.v1.Namespace(
                f"{name}-{ns}",
                metadata={
                    "name": ns,
                    "labels": standard_labels(
                        ns,
                        **{
                            "istio-injection": "enabled",
                            # The istio-init container needs NET_ADMIN, so "restricted" is audited
                            # and warned about rather than enforced; Triton pods meet it.
                            "pod-security.kubernetes.io/warn": "restricted",
                            "pod-security.kubernetes.io/audit": "restricted",
                        },
                    ),
                },
                opts=resource_opts(self, provider=provider, depends_on=after_injector),
            )
            k8s.apiextensions.CustomResource(
                f"{name}-{ns}-mtls",
                api_version="security.istio.io/v1",
                kind="PeerAuthentication",
                metadata={"name": "default", "namespace": ns, "labels": standard_labels(ns)},
                spec={"mtls": {"mode": "STRICT"}},
                opts=resource_opts(
                    self, provider=provider, depends_on=[namespace] + ([mesh_crds] if mesh_crds else [])
                ),
            )
            self.namespaces[ns] = namespace
        self.register_outputs({"namespaces": {ns: n.metadata["name"] for ns, n in self.namespaces.items()}})
