"""`observability`: Prometheus, Loki, alert thresholds and the alert receivers."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, model_validator

from inference_platform.core import grammar
from inference_platform.settings.base import Model, Number, Quantity, Subdomain, _checked


class AlertThresholds(Model):
    queue_time_ms: Number = Field(default=100.0, ge=0.001, le=600000)
    """Average Triton queue time above which the queue-time alert fires, milliseconds (0.001-600000)."""
    failure_ratio: Number = Field(default=0.05, ge=0.0001, lt=1)
    """Share of failed inference requests above which the failure alerts fire (Triton failures per version, requests the gateway cut at the route timeout, and the errors of a Ray graph's step; 0.0001 to below 1)."""
    gpu_memory_ratio: Number = Field(default=0.95, ge=0.01, le=1)
    """GPU framebuffer use above which the GPU memory alert fires."""


EMAIL_ADDRESS = r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)+$"


class WebhookReceiver(Model):
    """Alerts POSTed as Alertmanager's webhook JSON; the URL is the receiver's secret."""

    send_resolved: bool = True
    """Also send a notification when the alert clears."""


class SlackReceiver(Model):
    """Alerts posted to a Slack channel; the incoming-webhook URL is the receiver's secret."""

    channel: str = Field(pattern=r"^[#@][a-z0-9._-]{1,80}$")
    """Channel (`#name`) or user (`@name`) to post to."""
    send_resolved: bool = True
    """Also post when the alert clears."""


class EmailReceiver(Model):
    """Alerts e-mailed through an SMTP relay; the SMTP password is the receiver's secret."""

    to: str = Field(pattern=EMAIL_ADDRESS)
    """Recipient address."""
    from_: str = Field(alias="from", pattern=EMAIL_ADDRESS)
    """Sender address."""
    smarthost: str = Field(pattern=r"^[A-Za-z0-9]([-A-Za-z0-9.]{0,251}[A-Za-z0-9])?:[0-9]{1,5}$")
    """SMTP relay as `host:port`, e.g. `smtp.example.com:587`."""
    auth_username: Annotated[str, _checked(grammar.text, 255)]
    """SMTP user name (the password is the receiver's secret)."""
    require_tls: bool = True
    """Refuse to send unless the relay offers STARTTLS."""


class PagerDutyReceiver(Model):
    """Alerts sent to a PagerDuty service through Events API v2; the integration (routing) key is the receiver's secret."""

    send_resolved: bool = True
    """Resolve the PagerDuty incident when the alert clears."""


class AlertReceiver(Model):
    name: Annotated[str, _checked(grammar.dns_label, 40)]
    """Receiver name (DNS label), referred to by `critical` and `warning`; its secret is `alertReceiverSecrets.<name>`."""
    webhook: Optional[WebhookReceiver] = None
    """Send to a webhook (secret: its URL)."""
    slack: Optional[SlackReceiver] = None
    """Send to Slack (secret: the incoming-webhook URL)."""
    email: Optional[EmailReceiver] = None
    """Send e-mail (secret: the SMTP password)."""
    pagerduty: Optional[PagerDutyReceiver] = None
    """Send to PagerDuty (secret: the Events API v2 routing key)."""

    @model_validator(mode="after")
    def _one_kind(self) -> "AlertReceiver":
        kinds = [k for k in RECEIVER_KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"a receiver has exactly one of {', '.join(RECEIVER_KINDS)}; found {', '.join(kinds) or 'none'}")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in RECEIVER_KINDS if getattr(self, k) is not None)


RECEIVER_KINDS = ("webhook", "slack", "email", "pagerduty")


class AlertingSettings(Model):
    receivers: list[AlertReceiver] = Field(default=[], max_length=20)
    """Where alerts go: webhook, Slack, e-mail or PagerDuty receivers. With none, Alertmanager keeps every alert to itself (receiver `null`)."""
    critical: list[Annotated[str, _checked(grammar.dns_label, 40)]] = []
    """Receivers of alerts with severity `critical` (each gets every one)."""
    warning: list[Annotated[str, _checked(grammar.dns_label, 40)]] = []
    """Receivers of alerts with severity `warning`."""
    repeat_interval: str = Field(default="4h", pattern=r"^[1-9][0-9]{0,3}(m|h|d)$")
    """How often a firing alert is sent again, e.g. `4h`."""


class ObservabilitySettings(Model):
    enabled: bool = True
    """Install kube-prometheus-stack, prometheus-adapter, Loki, Alloy and Grafana."""
    prometheus_retention: str = Field(default="15d", pattern=r"^[1-9][0-9]{0,5}(h|d|w|y)$")
    """How long Prometheus keeps samples."""
    prometheus_storage_size: Quantity = "50Gi"
    """Prometheus volume size."""
    storage_class: Optional[Subdomain] = None
    """StorageClass of observability volumes (default: the cluster default)."""
    loki_storage: Literal["filesystem", "s3"] = "filesystem"
    """Loki chunk storage: a volume, or the S3 weight cache's endpoint."""
    loki_storage_size: Quantity = "20Gi"
    """Loki volume size (filesystem storage)."""
    loki_retention: str = Field(default="168h", pattern=r"^[1-9][0-9]{0,5}(h|d|w)$")
    """How long Loki keeps logs."""
    alerts: AlertThresholds = AlertThresholds()
    """Alert thresholds."""
    alerting: AlertingSettings = AlertingSettings()
    """Alertmanager receivers and which severities reach them (docs/observability.md: Routing alerts)."""
