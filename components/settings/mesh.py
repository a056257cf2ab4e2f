"""`mesh`: Istio, the ingress gateway's TLS, Jaeger and Kiali."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, Field, model_validator

from inference_platform.core import grammar
from inference_platform.settings.base import HttpsUrl, Model, Number, Quantity, Subdomain, Text, _checked, _mode_settings
from inference_platform.settings.errors import KeyPath


class GatewayTls(Model):
    enabled: bool = False
    """Serve HTTPS on the ingress gateway."""
    secret_name: Optional[Subdomain] = None
    """Kubernetes TLS Secret (in istio-system) holding the certificate; required when enabled."""

    @model_validator(mode="after")
    def _secret_when_enabled(self) -> "GatewayTls":
        if self.enabled and not self.secret_name:
            raise ValueError("tls.enabled needs secretName (a kubernetes.io/tls Secret in istio-system)")
        return self


class KialiOpenId(Model):
    issuer_uri: HttpsUrl
    """The identity provider's issuer URL (Kiali reads its discovery document)."""
    client_id: Text
    """Kiali's client id at the identity provider. The client secret goes into the Secret `kiali` (key `oidc-secret`) in istio-system, created by the identity-provider owner."""
    username_claim: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.:-]{0,62}$")] = "sub"
    """Token claim shown as the user name."""


class MeshSettings(Model):
    enabled: bool = True
    """Install Istio (base, istiod, ingress gateway)."""
    gateway_annotations: dict[Annotated[str, _checked(grammar.qualified_key, "annotation key")],
                              Annotated[str, AfterValidator(grammar.annotation_value)]] = {}
    """Annotations of the ingress gateway's LoadBalancer Service (e.g. Octavia settings), and of each LLM service's Gateway's (at most 8 then, none under `gateway.networking.k8s.io/`: the Gateway passes them as `spec.infrastructure.annotations`)."""
    tls: GatewayTls = GatewayTls()
    """TLS of the customer Gateway."""
    allow_plain_http_credentials: bool = False
    """Serve `basic` and `jwt` services and graphs over plain HTTP while `tls` is off without the plan's warning; non-production stacks only (their credentials then cross the network unencrypted; a production stack refuses them without `tls`)."""
    tracing_sampling_percent: Number = Field(default=1.0, ge=0.0, le=100.0)
    """Percent of requests traced to Jaeger."""
    jaeger_storage: Literal["memory", "persistent"] = "memory"
    """Jaeger trace storage."""
    jaeger_storage_size: Quantity = "10Gi"
    """Volume size for persistent Jaeger storage."""
    kiali_auth: Literal["token", "openid", "anonymous"] = "token"
    """Kiali login strategy; in production stacks `anonymous` is refused, and so is `token` when `ui.kiali` serves Kiali on a host (a ServiceAccount token would be the login from the internet)."""
    kiali_openid: Optional[KialiOpenId] = None
    """Identity provider of Kiali's `openid` strategy (required with it)."""

    @model_validator(mode="after")
    def _openid_settings(self) -> "MeshSettings":
        _mode_settings("kialiAuth", self.kiali_auth, "openid", "kialiOpenid", self.kiali_openid,
                       "kialiOpenid.issuerUri and kialiOpenid.clientId")
        return self


# gateway-api v1.5.1 standard Gateway CRD: spec.infrastructure.annotations maxProperties.
GATEWAY_INFRASTRUCTURE_ANNOTATIONS_MAX = 8
# istio 1.30.3 deploymentcontroller.go translateInfraMeta: keys it leaves off the objects it deploys.
GATEWAY_API_PREFIX = "gateway.networking.k8s.io/"


def llm_gateway_annotation_problems(annotations: dict[str, str], key: KeyPath) -> list[tuple[KeyPath, str]]:
    """The gateway annotations as an LLM service's Gateway carries them (`infrastructure.annotations`
    for what istiod deploys): what the Gateway API's schema and Istio take. The stack (with an LLM
    service) and TritonService used alone both run it."""
    problems: list[tuple[KeyPath, str]] = []
    if len(annotations) > GATEWAY_INFRASTRUCTURE_ANNOTATIONS_MAX:
        problems.append((key, f"{len(annotations)} annotations, but an LLM service's Gateway passes them to its "
                         f"LoadBalancer Service as spec.infrastructure.annotations, which takes at most "
                         f"{GATEWAY_INFRASTRUCTURE_ANNOTATIONS_MAX}; allowed: at most {GATEWAY_INFRASTRUCTURE_ANNOTATIONS_MAX}"))
    problems += [((*key, k), f"istiod leaves annotations under {GATEWAY_API_PREFIX} off the objects it deploys for an LLM "
                  f"service's Gateway; allowed: a key under another prefix") for k in annotations if k.startswith(GATEWAY_API_PREFIX)]
    return problems
