"""The policies of the pack, importable without starting a policy server.

Imported as `policies.rules` by the offline runner and tests, and as top-level
`rules` by the pack's `__main__.py` (the CLI puts the pack directory on sys.path).
"""

from __future__ import annotations

from pulumi_policy import Policy

from inference_platform.settings.policies import POLICY_NAMES

from . import correctness, cost, data_safety, security

PACK_NAME = "inference-platform"

ALL_POLICIES: list[Policy] = [*security.POLICIES, *correctness.POLICIES, *data_safety.POLICIES, *cost.POLICIES]
BY_NAME: dict[str, Policy] = {p.name: p for p in ALL_POLICIES}

if tuple(BY_NAME) != POLICY_NAMES:
    raise AssertionError("inference_platform.settings.policies and the rules disagree on the policy names")
