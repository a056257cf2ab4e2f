"""What a plan records of its stack's settings that no resource shows, for `diff` to read: the Magnum
driver, which decides what a cluster template edit reaches (template_edits.py). Plans written before
it have none, and a diff then knows no driver."""

from __future__ import annotations

from typing import Any, Optional

from inference_platform.settings.stack import Settings

MAGNUM_DRIVER = "magnumDriver"


def plan_facts(settings: Settings) -> dict[str, Any]:
    driver = settings.cluster.magnum_labeller
    return {MAGNUM_DRIVER: driver} if driver else {}


def magnum_driver(plan_json: dict[str, Any]) -> Optional[str]:
    driver = (plan_json.get("facts") or {}).get(MAGNUM_DRIVER)
    return driver if isinstance(driver, str) else None
