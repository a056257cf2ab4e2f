"""What the offline plan knows of the Kubernetes provider's configuration: the cluster its
kubeconfig, context and cluster inputs select (kept as a keyed digest, never the kubeconfig),
and the environment the SDK would copy into its inputs (pinned while rendering)."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Optional

import yaml

from .replacement import KUBERNETES_PROVIDER
from .secret_digests import digest


def _revealed(value: Any, is_secret: Callable[[dict], bool]) -> Any:
    """A wire value with its secrets' values in place (kept in memory only)."""
    if isinstance(value, dict):
        if is_secret(value):
            return _revealed(value.get("value"), is_secret)
        return {k: _revealed(v, is_secret) for k, v in value.items()}
    if isinstance(value, list):
        return [_revealed(v, is_secret) for v in value]
    return value


def _named(entries: Any, field: str) -> dict[str, Any]:
    return {e["name"]: e.get(field) for e in entries or () if isinstance(e, dict) and isinstance(e.get("name"), str)}


def active_cluster(provider_inputs: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The cluster entry a Kubernetes provider's kubeconfig, context and cluster select, as
    pulumi-kubernetes util.go getActiveClusterFromConfig resolves it; None where the plan cannot
    know it: no kubeconfig (ambient), a file path (the plan reads no files), a placeholder."""
    text = provider_inputs.get("kubeconfig")
    if isinstance(text, str) and ("\n" in text or text.lstrip().startswith("{")):
        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
    else:
        config = text if isinstance(text, dict) else None
    if not isinstance(config, dict):
        return None
    clusters = _named(config.get("clusters"), "cluster")
    context = _named(config.get("contexts"), "context").get(provider_inputs.get("context") or config.get("current-context"))
    if not clusters or not isinstance(context, dict):
        return None
    found = clusters.get(provider_inputs.get("cluster") or context.get("cluster"))
    return found if isinstance(found, dict) else None


def active_cluster_digest(type_token: str, wire: Any, is_secret: Callable[[dict], bool], key: bytes) -> str:
    """A Kubernetes provider registration's keyed digest of its active cluster ("" if unknown)."""
    if type_token != KUBERNETES_PROVIDER or not isinstance(wire, dict):
        return ""
    found = active_cluster(_revealed(wire, is_secret))
    return digest(key, found) if found is not None else ""


# What the Kubernetes SDK copies from the environment into every Provider's inputs
# (pulumi_kubernetes/provider.py: KUBECONFIG and the PULUMI_K8S_* switches). A plan renders
# without them, so it is the same wherever it runs; the diff notes where `up` would differ.
_PROVIDER_ENVIRONMENT = ("KUBECONFIG", "PULUMI_K8S_")


@contextlib.contextmanager
def pinned_provider_environment():
    saved = {k: v for k, v in os.environ.items() if k == "KUBECONFIG" or k.startswith(_PROVIDER_ENVIRONMENT[1])}
    for k in saved:
        del os.environ[k]
    try:
        yield
    finally:
        os.environ.update(saved)
