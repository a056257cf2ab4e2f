"""The stack's identity: its name against `customer` and `environment`, and a production-named
environment against `production`. `customer` and `environment` name every resource the
platform declares, so a stack file that disagrees with its own stack name plans now and
replaces everything on the day somebody corrects it."""

from __future__ import annotations

import re
from typing import Optional

from inference_platform.settings.errors import KeyPath
from inference_platform.settings.stack import Settings

# Environment names that say "production": the name itself, or the name and a suffix
# (`prod-eu`, `production-2`). `preprod`, `prod2` and `nonprod` are not on it.
PRODUCTION_ENVIRONMENTS = ("prod", "production", "prd")
_PRODUCTION_NAME = re.compile(rf"(?:{'|'.join(PRODUCTION_ENVIRONMENTS)})(?:-[a-z0-9-]+)?")


def production_named(environment: str) -> bool:
    """An environment whose name says it is production (PRODUCTION_ENVIRONMENTS, bare or with a `-<suffix>`)."""
    return bool(_PRODUCTION_NAME.fullmatch(environment))


def production_problems(s: Settings) -> list[tuple[KeyPath, str]]:
    """A production-named environment with `production: false` needs its reason written down
    (`nonProductionReason`); the reason is refused where it contradicts `production: true`."""
    if s.production and s.non_production_reason is not None:
        return [(("nonProductionReason",), "contradicts production: true; allowed: remove the key, "
                 "or production: false")]
    if not s.production and s.non_production_reason is None and production_named(s.environment):
        return [(("production",), f"false in environment {s.environment!r}, whose name says production "
                 f"({', '.join(PRODUCTION_ENVIRONMENTS)}, bare or with a -<suffix>): nothing would be protected "
                 "and open auth would be allowed; allowed: true, or keep false and say why in "
                 "nonProductionReason")]
    return []


def stack_name_problems(s: Settings, stack: Optional[str]) -> list[tuple[KeyPath, str]]:
    """A stack named `<a>-<b>...` (the project's `<customer>-<environment>` form) must be named
    `<customer>-<environment>`, or that and a `-<suffix>` (`acme-prod-eu`); a name without '-'
    (`dev`, `race`) says nothing of either and is never refused. None: no stack name (a
    component used alone)."""
    if stack is None or "-" not in stack:
        return []
    spelt = f"{s.customer}-{s.environment}"
    if stack == spelt or stack.startswith(spelt + "-"):
        return []
    rule = (f"the stack name {stack!r} is not `<customer>-<environment>` ({spelt!r}) nor that with a "
            "`-<suffix>`; resources are named from customer and environment, so correcting them later "
            "replaces every resource of the stack")
    if stack.startswith(s.customer + "-"):
        wanted = stack[len(s.customer) + 1:]
        return [(("environment",), f"{s.environment!r}: {rule}; allowed: environment {wanted!r}, "
                 f"or the stack {spelt!r}")]
    if stack.endswith("-" + s.environment):
        wanted = stack[: -len(s.environment) - 1]
        return [(("customer",), f"{s.customer!r}: {rule}; allowed: customer {wanted!r}, or the stack {spelt!r}")]
    head, _, tail = stack.rpartition("-")
    return [(("customer",), f"{s.customer!r} (environment {s.environment!r}): {rule}; allowed: customer "
             f"{head!r} and environment {tail!r}, or the stack {spelt!r}")]
