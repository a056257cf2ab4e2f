"""Secrets reach objects only through Secrets: no Kubernetes object but a Secret holds a Pulumi
secret (rendered `[secret]`) or a stack file's secure value (the offline plan's placeholder).
Whoever may read a Deployment, a TrainJob or a Helm release's values would read the value in
clear text, and the state would hold it beside the object's other inputs."""

from __future__ import annotations

import json
from typing import Any

from .engine import SECURE_PLACEHOLDER
from .plan_model import SECRET as SECRET_MARK

SECRET_TYPE = "kubernetes:core/v1:Secret"


def violations(resources: list[dict[str, Any]]) -> list[str]:
    found = []
    for r in resources:
        if not r["type"].startswith("kubernetes:") or r["type"] == SECRET_TYPE:
            continue
        text = json.dumps(r.get("inputs") or {})
        # The plan's mark of a Pulumi secret, and the offline plan's stand-in for a secure value.
        for mark, what in ((SECRET_MARK, "a Pulumi secret"), (SECURE_PLACEHOLDER, "a secure value of the stack file")):
            if mark in text:
                found.append(f"{r['type']} {r['name']} holds {what} in its inputs: secrets reach objects only through "
                             "a Secret (valueFrom.secretKeyRef, a volume, or a chart's existingSecret)")
                break
    return found
