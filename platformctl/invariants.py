"""The checks every plan runs after rendering: ordering invariants, pod placement, the selectors that
must leave the gateway pods istiod deploys alone, secrets only in Secrets, and await budgets."""

from __future__ import annotations

from typing import Any, Union

from inference_platform.settings.stack import Settings

from . import awaits, gateway_pods, ordering, placement, secret_leaks
from .plan_model import Plan


class PlanInvariantError(Exception):
    """A plan `pulumi up` would order wrongly or time out on: one line, the first problem and a count."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"plan check failed: {problems[0]}{more}".replace("\n", " "))


def plan_resources(plan: Union[Plan, dict[str, Any], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Resources as resources.json has them, from a rendered plan or a loaded one."""
    if isinstance(plan, Plan):
        return [r.to_json() for r in plan.resources]
    if isinstance(plan, dict):
        return plan["resources"]
    return plan


def problems(plan, settings: Settings) -> tuple[list[awaits.Row], list[str]]:
    """The await table's rows, and every violation: ordering first, then awaits."""
    resources = plan_resources(plan)
    rows, await_problems = awaits.check(resources, settings)
    return rows, (ordering.violations(resources) + placement.violations(resources, settings)
                  + placement.shared_claim_violations(resources) + gateway_pods.violations(resources)
                  + secret_leaks.violations(resources)
                  + await_problems)


def check_plan(plan, settings: Settings) -> str:
    """The await table; raises PlanInvariantError when an invariant or a budget is violated."""
    rows, found = problems(plan, settings)
    if found:
        raise PlanInvariantError(found)
    return awaits.format_rows(rows)
