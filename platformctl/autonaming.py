"""The names providers give the resources a program leaves unnamed.

The real engine asks the provider to fill in a missing name (its Check), so the name a
resource gets in the cloud is not the program's: a selector or reference built from the
logical name misses it. The plan shows the name each unnamed resource will get, with a
stable stand-in for the random part, so such a mismatch is visible (and placement.py's
check fails on it).
"""

from __future__ import annotations

import hashlib
import importlib
from functools import lru_cache
from typing import Optional

# Bridged providers that call ProviderInfo.SetAutonaming(maxLength, separator)
# (pulumi-terraform-bridge pkg/tfbridge/info.go): every resource with a string `name` input
# gets `<logical name><separator><7 random hex>` (AutoName, AutoNameOptions.Randlen 7).
# pulumi-openstack: provider/resources.go `prov.SetAutonaming(255, "-")`.
# pulumi-openstack 5.5.1: provider/resources.go `prov.SetAutonaming(255, "-")`. The types we declare
# with a `name` input: containerinfra Cluster (Optional, ForceNew) and ClusterTemplate (Required),
# NodeGroup (Required, ForceNew), sharedfilesystem Share (Required); terraform-provider-openstack
# v3.4.0 resource_openstack_*.go. pulumi-random's RandomPassword has no `name` input: nothing to name.
BRIDGED_AUTONAMING = {"openstack": "-"}
RANDOM_HEX = 7
# pulumi-kubernetes v4.32.0: an object without metadata.name (nor generateName) gets
# `<logical name>-<8 hex>` (provider/pkg/metadata/naming.go AssignNameIfAutonamable:
# resource.NewUniqueName(seed, urn.Name()+"-", 0, 0, nil), whose randlen 0 means 8 of [0-9a-f]);
# a Helm Release without `name` likewise (provider/helm_release.go assignNameIfAutonameable,
# NewUniqueHex(urn.Name()+"-", 0, 0)). No lowercasing and no length cap: a logical name the API
# server refuses fails the `up`.
KUBERNETES_RANDOM_HEX = 8


def stand_in(logical_name: str, length: int = RANDOM_HEX) -> str:
    """The plan's stand-in for the engine's random suffix: stable, so plans compare."""
    return hashlib.sha256(logical_name.encode()).hexdigest()[:length]


@lru_cache(maxsize=None)
def takes_name(type_token: str) -> bool:
    """Whether the provider's resource type has a `name` input (read from its Python SDK)."""
    package, _, rest = type_token.partition(":")
    module_path, _, cls = rest.partition(":")
    module = module_path.partition("/")[0]
    try:
        sdk = importlib.import_module(f"pulumi_{package}" + ("" if module == "index" else f".{module}"))
    except ImportError:
        return False
    args = getattr(sdk, f"{cls}Args", None)
    return args is not None and isinstance(getattr(args, "name", None), property)


def kubernetes_name(logical_name: str) -> str:
    """The name pulumi-kubernetes gives an object (or a Helm release) the program left unnamed."""
    return f"{logical_name}-{stand_in(logical_name, KUBERNETES_RANDOM_HEX)}"


def bridged_name(type_token: str, logical_name: str, inputs: dict) -> Optional[str]:
    """The name a bridged provider gives a resource whose program set none; None when the
    program named it or the type is not auto-named."""
    separator = BRIDGED_AUTONAMING.get(type_token.partition(":")[0])
    if separator is None or inputs.get("name") is not None or not takes_name(type_token):
        return None
    return f"{logical_name}{separator}{stand_in(logical_name)}"


def made_up_name(resource: dict) -> Optional[str]:
    """The name a plan's resource shows its provider giving it; None where the program named it."""
    inputs, outputs = resource.get("inputs") or {}, resource.get("outputs") or {}
    if resource.get("type", "").startswith("kubernetes:"):
        named = "name" in (inputs.get("metadata") or {})
        name = None if named else (outputs.get("metadata") or {}).get("name")
    else:
        name = None if "name" in inputs else outputs.get("name")
    return name if isinstance(name, str) and name else None


def _renamed(value, names: dict[str, str]):
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    return value


def keep_old_names(old: dict[str, dict], new: dict[str, dict]) -> dict[str, dict]:
    """The new plan's resources as an update sees them: a resource the provider named keeps the
    name in its state, and what refers to it keeps referring to that name. pulumi-kubernetes
    v4.32.0 Check adopts the old name (metadata/naming.go AdoptOldAutonameIfUnnamed; Helm releases
    adoptOldNameIfUnnamed), the bridge reuses the prior state's (tfbridge ComputeAutoNameDefault).
    A replacement is given a fresh name; the diff then finds the references unknown, as before."""
    names = {}
    for key, resource in new.items():
        was, now = made_up_name(old.get(key) or {}), made_up_name(resource)
        if was and now and was != now:
            names[now] = was
    if not names:
        return new
    return {key: {**r, **{f: _renamed(r[f], names) for f in ("inputs", "outputs") if f in r}} for key, r in new.items()}
