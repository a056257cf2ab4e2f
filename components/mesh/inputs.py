"""What Mesh takes: its settings and the names it consumes."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from inference_platform.settings.base import Host, Labels, Model
from inference_platform.settings.checks import kiali_login_problems, plain_http_credentials_opt_in_problems, ui_gateway_problems
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.mesh import MeshSettings
from inference_platform.settings.ui import UiSettings


class MeshInputs(Model):
    """Istio (base, istiod, ingress gateway), the customer Gateway, Jaeger and Kiali."""

    mesh: MeshSettings = MeshSettings()
    """Mesh settings (the stack file's `mesh`)."""
    ui: UiSettings = UiSettings()
    """Hosts on which Grafana and Kiali are served through the gateway."""
    hosts: list[Host] = []
    """Host names of the inference services the customer Gateway serves."""
    production: bool = False
    """Protect Jaeger's volume; anonymous Kiali is refused."""
    storage_class: Optional[str] = None
    """StorageClass of Jaeger's volume (default: the cluster's)."""
    request_timeout_seconds: int = Field(default=60, ge=1, le=3600)
    """Longest route timeout of the services and graphs behind the gateway: a gateway pod that
    stops drains this long, so no request it carries is cut."""
    node_boot_seconds: int = Field(default=120, ge=0, le=7200)
    """Seconds a VM takes to boot: about what a load balancer for the gateway takes."""
    gateway_api: bool = False
    """Install the Gateway API (v1.5.1 standard) and InferencePool (v1.4.0) CRDs and turn on istiod's inference extension: the stack has an LLM service (docs/serving.md: LLM routing)."""
    system_node_selector: Labels = {}
    """Node labels the pods of istiod, the ingress gateway, Jaeger and Kiali select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """What the stack file's cross checks refuse of the mesh, its UI hosts and the hosts it
        serves, for the component used alone."""
        found: list[tuple[KeyPath, str]] = []
        found += [(("mesh", "kiali_auth"), why)
                  for why in kiali_login_problems(self.production, self.mesh.kiali_auth, self.ui.kiali is not None)]
        found += plain_http_credentials_opt_in_problems(self.mesh, self.production)
        return found + ui_gateway_problems(self.ui, self.mesh, self.production,
                                           {host: f"hosts[{i}]" for i, host in enumerate(self.hosts)})
