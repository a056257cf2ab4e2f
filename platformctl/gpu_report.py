"""The GPU part of the plan output: capacity warnings and the cold-start estimate."""

from __future__ import annotations

from components.config import Settings
from components.estimates import format_estimate, stack_estimates
from components.gpu_profiles import capacity_warnings


def gpu_report(settings: Settings) -> str:
    lines = [f"warning: {w}" for w in capacity_warnings(settings)]
    if settings.gpu_groups:
        lines.append(format_estimate(stack_estimates(settings)))
    return "\n".join(lines)
