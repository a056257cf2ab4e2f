"""Entry point the Pulumi CLI runs: builds the PolicyPack from the rules.

Constructing a PolicyPack starts the analyzer server and never returns, so nothing
else imports this module; tests and `python -m platformctl policy` import `rules`.
"""

from pulumi_policy import EnforcementLevel, PolicyPack
from rules import ALL_POLICIES, PACK_NAME

PolicyPack(
    name=PACK_NAME,
    policies=ALL_POLICIES,
    enforcement_level=EnforcementLevel.MANDATORY,
    description="Security, correctness, data safety and cost guards of the inference platform.",
)
