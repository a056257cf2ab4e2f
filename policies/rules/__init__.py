"""The policies of the pack, importable without starting a policy server.

Imported as `policies.rules` by the offline runner and tests, and as top-level
`rules` by the pack's `__main__.py` (the CLI puts the pack directory on sys.path).
"""

from __future__ import annotations

from pulumi_policy import Policy

from . import correctness, cost, data_safety, security

try:
    from ..catalog import POLICY_NAMES
except ImportError:  # run by the Pulumi CLI: `rules` is a top-level package beside catalog.py
    from catalog import POLICY_NAMES

PACK_NAME = "inference-platform"

ALL_POLICIES: list[Policy] = [*security.POLICIES, *correctness.POLICIES, *data_safety.POLICIES, *cost.POLICIES]
BY_NAME: dict[str, Policy] = {p.name: p for p in ALL_POLICIES}

if tuple(BY_NAME) != POLICY_NAMES:
    raise AssertionError("policies/catalog.py and the rules disagree on the policy names")
