"""A plan: the resources a program registers, as the offline engine records them.

Kept apart from the engine (engine.py) so that what reads plans (objects.py, plan.py,
the checks) needs no engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

SECRET = "[secret]"
UNKNOWN = "[unknown]"


@dataclass
class Resource:
    urn: str
    type: str
    name: str
    parent: Optional[str]
    custom: bool
    provider: Optional[str]
    depends_on: list[str]
    protect: bool
    retain_on_delete: bool
    delete_before_replace: bool
    ignore_changes: list[str]
    inputs: dict[str, Any]
    replace_on_changes: list[str] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    """The `customTimeouts` option as sent (Go durations by operation: create, update, delete)."""
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    """Per top-level input, the resources whose outputs it holds (the request's propertyDependencies)."""
    aliases: list[dict[str, Any]] = field(default_factory=list)
    """The `aliases` option as sent: `{"urn": ...}` or a spec's set fields (aliases.py resolves them)."""
    secret_digests: dict[str, str] = field(default_factory=dict)
    """Input path -> keyed digest of the secret value there (secret_digests.py), to see it change."""
    active_cluster_digest: str = ""
    """A Kubernetes provider's: keyed digest of the cluster its config selects (engine.active_cluster), if known."""

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "provider": self.provider,
            "dependsOn": self.depends_on,
            **({"propertyDependencies": self.property_dependencies} if self.property_dependencies else {}),
            "protect": self.protect,
            "retainOnDelete": self.retain_on_delete,
            "deleteBeforeReplace": self.delete_before_replace,
            "ignoreChanges": self.ignore_changes,
            "replaceOnChanges": self.replace_on_changes,
            "customTimeouts": self.custom_timeouts,
            "aliases": self.aliases,
            "inputs": self.inputs,
            **({"secretDigests": self.secret_digests} if self.secret_digests else {}),
            **({"activeClusterDigest": self.active_cluster_digest} if self.active_cluster_digest else {}),
            **({"outputs": {"metadata": {"name": self.rendered_name}}} if self.rendered_name else {}),
            **({"outputs": {"name": self.provider_name}} if self.provider_name else {}),
        }

    @property
    def provider_name(self) -> Optional[str]:
        """The name a bridged provider gives a resource the program left unnamed
        (`<logical name>-<random>`, autonaming.py), as the cloud will show it."""
        if self.type.startswith("kubernetes:") or "name" in self.inputs:
            return None
        name = self.outputs.get("name")
        return name if isinstance(name, str) and name != SECRET else None

    @property
    def rendered_name(self) -> Optional[str]:
        """A Kubernetes object's metadata.name as applied (auto-names exist only in the outputs);
        kept in resources.json so offline policies can resolve references by name."""
        if not self.type.startswith("kubernetes:") or self.type.startswith("kubernetes:helm.sh"):
            return None
        name = (self.outputs.get("metadata") or {}).get("name")
        return name if isinstance(name, str) and name != SECRET else None


@dataclass
class Plan:
    stack: str
    resources: list[Resource]
    outputs: dict[str, Any]
    secret_digest_key: str = ""
    """Id of the key the resources' secretDigests were made with (secret_digests.key_id)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What the stack's settings say that no resource shows (plan_facts.py): the Magnum driver."""

    def of_type(self, type_token: str) -> list[Resource]:
        return [r for r in self.resources if r.type == type_token]

    def get(self, type_token: str, name: str) -> Resource:
        found = [r for r in self.resources if r.type == type_token and r.name == name]
        if len(found) != 1:
            raise KeyError(f"{len(found)} resources of type {type_token} named {name}")
        return found[0]

    def by_urn(self, urn: str) -> Resource:
        return next(r for r in self.resources if r.urn == urn)

    def children(self, parent: Resource) -> list[Resource]:
        return [r for r in self.resources if r.parent == parent.urn]

    def to_json(self) -> dict[str, Any]:
        out = {"stack": self.stack, "resources": [r.to_json() for r in self.resources], "outputs": self.outputs}
        return (out | ({"secretDigestKey": self.secret_digest_key} if self.secret_digest_key else {})
                | ({"facts": self.facts} if self.facts else {}))
