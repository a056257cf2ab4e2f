"""`ui`: the hosts and logins of Grafana and Kiali."""

from __future__ import annotations

import json
import re
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, Field, model_validator

from inference_platform.settings.base import Host, HttpsUrl, Model, Text, _mode_settings


def _oauth_scope(value: str) -> str:
    # RFC 6749 3.3 scope-token; Grafana joins the scopes with spaces.
    if not re.fullmatch(r"[\x21\x23-\x5b\x5d-\x7e]{1,128}", value):
        raise ValueError(f"{json.dumps(value)} is not an OAuth scope; allowed: 1-128 printable ASCII characters "
                         "without spaces, '\"' or '\\'")
    return value


class GrafanaOidc(Model):
    auth_url: HttpsUrl
    """The identity provider's authorization endpoint (Grafana `auth.generic_oauth` `auth_url`)."""
    token_url: HttpsUrl
    """The identity provider's token endpoint (`token_url`)."""
    api_url: HttpsUrl
    """The identity provider's user-info endpoint (`api_url`)."""
    client_id: Text
    """Grafana's client id at the identity provider. The client secret is the stack secret `grafanaOidcClientSecret`; register `https://<ui.grafana.host>/login/generic_oauth` as the redirect URL."""
    scopes: list[Annotated[str, AfterValidator(_oauth_scope)]] = Field(default=["openid", "email", "profile"], min_length=1)
    """OAuth scopes Grafana asks for (printable ASCII without spaces, `"` or `\\`)."""
    role_attribute_path: Optional[Text] = None
    """JMESPath over the user info that yields the Grafana role (`Admin`, `Editor` or `Viewer`); unset: every user signs in as a Viewer."""


class GrafanaUi(Model):
    host: Host
    """Host name Grafana is served on through the ingress gateway."""
    auth: Literal["admin", "oidc"] = "admin"
    """Login: `admin` (user `admin`, password in the stack output `grafanaAdminPassword`) or `oidc` (an identity provider, with the admin login kept for recovery)."""
    oidc: Optional[GrafanaOidc] = None
    """Identity provider of auth `oidc` (required with it)."""

    @model_validator(mode="after")
    def _oidc_settings(self) -> "GrafanaUi":
        _mode_settings("auth", self.auth, "oidc", "oidc", self.oidc,
                       "oidc.authUrl, oidc.tokenUrl, oidc.apiUrl and oidc.clientId")
        return self


class KialiUi(Model):
    host: Host
    """Host name Kiali is served on through the ingress gateway (at `/`; login as `mesh.kialiAuth` says)."""


class UiSettings(Model):
    grafana: Optional[GrafanaUi] = None
    """Serve Grafana on a host of its own (off when unset: reach it with `kubectl port-forward`)."""
    kiali: Optional[KialiUi] = None
    """Serve Kiali on a host of its own (off when unset). Jaeger has no host: its traces are read in Grafana (Jaeger datasource) and Kiali."""
    allow_plain_http: bool = False
    """Serve the UI hosts over plain HTTP while `mesh.tls` is off; non-production stacks only (logins then cross the network unencrypted)."""

    @property
    def hosts(self) -> dict[str, str]:
        """UI name -> host, for the UIs given a host."""
        return {name: ui.host for name, ui in (("grafana", self.grafana), ("kiali", self.kiali)) if ui is not None}
