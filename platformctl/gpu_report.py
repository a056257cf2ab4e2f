"""The GPU part of the plan output: capacity warnings, the cold-start estimate, LLM memory fits, the
serving-first proof of the training quotas, the tuning runs that check their models' shapes when they start."""

from __future__ import annotations

from inference_platform.gpu.profiles import capacity_warnings
from inference_platform.serving.llm_memory import llm_memory_report
from inference_platform.settings.checks import credentials_in_clear_warnings
from inference_platform.settings.stack import Settings
from inference_platform.timing.estimates import format_estimate, stack_estimates
from inference_platform.training.capacity import proof_report
from inference_platform.tuning.perf_inputs import unseen_tuned_models


def plan_warnings(settings: Settings) -> list[str]:
    """The plan's warnings, each a `warning: ` line: what plans but will not do all it is asked
    (`plan --strict` exits 1 on any): GPU capacity, and credentials sent over plain HTTP."""
    return [f"warning: {w}" for w in capacity_warnings(settings) + credentials_in_clear_warnings(settings)]


def gpu_report(settings: Settings) -> str:
    lines = plan_warnings(settings)
    if settings.gpu_groups:
        lines.append(format_estimate(stack_estimates(settings)))
    lines += llm_memory_report(settings)
    lines += proof_report(settings)
    lines += unseen_tuned_models(settings)
    return "\n".join(lines)
