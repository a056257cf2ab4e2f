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
BRIDGED_AUTONAMING = {"openstack": "-"}
RANDOM_HEX = 7


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


def bridged_name(type_token: str, logical_name: str, inputs: dict) -> Optional[str]:
    """The name a bridged provider gives a resource whose program set none; None when the
    program named it or the type is not auto-named."""
    separator = BRIDGED_AUTONAMING.get(type_token.partition(":")[0])
    if separator is None or inputs.get("name") is not None or not takes_name(type_token):
        return None
    return f"{logical_name}{separator}{stand_in(logical_name)}"
