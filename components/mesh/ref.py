"""MeshRef: what a workload behind the ingress gateway needs to know of the mesh.

The one handle services and graphs take for the gateway, its ingress pods (namespace and
labels) and identity, the
Prometheus that scrapes them and whether the gateway serves HTTPS. `Mesh.reference` gives it;
a program on a cluster whose Istio the platform did not install names its own; the platform
stack's `serving` output holds its fields (examples/team-service-stackref reads them).
"""

from typing import Annotated

from pydantic import AfterValidator

from inference_platform.core import endpoints as ep
from inference_platform.core.input_types import GatewayInput, NameInput, TextInput
from inference_platform.settings.base import Labels, Model


def _some_labels(labels: dict[str, str]) -> dict[str, str]:
    if not labels:
        raise ValueError("no labels would admit every pod of ingress_namespace; allowed: the labels the ingress "
                         "gateway's pods carry (its Deployment's selector)")
    return labels


PodLabels = Annotated[Labels, AfterValidator(_some_labels)]

# Defaults where a component is used alone: the names the platform's own parts have.
GATEWAY = f"{ep.ISTIO_NAMESPACE}/{ep.GATEWAY_NAME}"
# The gateway chart's ServiceAccount is named after the release.
INGRESS_PRINCIPAL = f"cluster.local/ns/{ep.ISTIO_NAMESPACE}/sa/{ep.GATEWAY_RELEASE}"


class MeshRef(Model):
    """The mesh a workload is served through: the Istio Gateway, the ingress gateway's namespace and identity, the monitoring namespace, TLS."""

    gateway: GatewayInput = GATEWAY
    """`<namespace>/<name>` of the Istio Gateway that serves the hosts."""
    ingress_namespace: NameInput = ep.ISTIO_NAMESPACE
    """Namespace of the ingress gateway pods: the only source the workload's NetworkPolicy admits besides monitoring."""
    ingress_pod_labels: PodLabels = dict(ep.INGRESS_POD_LABELS)
    """Labels of the ingress gateway's pods in `ingress_namespace`: the only pods there the workload's NetworkPolicy admits to Triton's HTTP and gRPC ports (a Ray graph's: Serve's), and in Istio's root namespace the pods Basic Auth's DENY policy selects. The default is the label the Istio gateway chart gives the pods of a release named `istio-ingressgateway` (`istio: <release without istio->`); give yours for another release name."""
    ingress_principal: TextInput = INGRESS_PRINCIPAL
    """SPIFFE principal of the ingress gateway, the only outside caller the workload's AuthorizationPolicy allows."""
    monitoring_namespace: NameInput = ep.MONITORING_NAMESPACE
    """Namespace of the Prometheus that scrapes the workload's metrics."""
    tls: bool = False
    """The gateway serves the hosts over HTTPS (the workload's URLs)."""
