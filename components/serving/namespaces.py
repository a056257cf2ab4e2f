"""Inference namespaces: one per distinct service namespace, shared by the services in it.

Services may share a namespace, so namespaces (and what applies to a whole namespace:
sidecar injection, STRICT mTLS) are created here once, after istiod and before weight
caches and Triton services place objects in them.
"""


from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.args import InferenceNamespacesArgs
from inference_platform.core.common import init_component, resource_opts, standard_labels
from inference_platform.serving.inputs import InferenceNamespacesInputs
from inference_platform.settings.component_args import validated


class InferenceNamespaces(pulumi.ComponentResource):
    """Namespaces of the Triton services, labelled for Istio sidecar injection, with STRICT mTLS.

    Give it `dependsOn` istiod's release (and the one with Istio's CRDs): the injection
    label takes effect only once istiod's webhook runs, so a namespace created after it
    gives every workload placed in it a sidecar from the first pod on.
    """

    namespaces_created: pulumi.Output[list[str]]
    """The namespaces' names."""

    def __init__(self, name: str, args: InferenceNamespacesArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(InferenceNamespacesInputs, args, "InferenceNamespaces")
        init_component(self, "InferenceNamespaces", name, opts)
        self.namespaces: dict[str, k8s.core.v1.Namespace] = {}
        for ns in sorted(set(a.namespaces)):
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
                opts=resource_opts(self),
            )
            k8s.apiextensions.CustomResource(
                f"{name}-{ns}-mtls",
                api_version="security.istio.io/v1",
                kind="PeerAuthentication",
                metadata={"name": "default", "namespace": ns, "labels": standard_labels(ns)},
                spec={"mtls": {"mode": "STRICT"}},
                opts=resource_opts(self, depends_on=[namespace]),
            )
            self.namespaces[ns] = namespace
        self.namespaces_created = pulumi.Output.all(*[n.metadata["name"] for n in self.namespaces.values()])
        self.register_outputs({"namespaces": {ns: n.metadata["name"] for ns, n in self.namespaces.items()}})
