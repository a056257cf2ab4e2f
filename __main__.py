"""The Pulumi program: load the stack's settings, build the platform, export outputs."""

import pulumi

from inference_platform.platform import InferencePlatform
from inference_platform.settings.loader import load_settings

settings = load_settings()
platform = InferencePlatform(f"{settings.customer}-{settings.environment}", settings)

# kubeconfig and service credentials are secrets; the rest (URLs, weights) is plain.
for key, value in platform.outputs.items():
    pulumi.export(key, pulumi.Output.secret(value) if key == "kubeconfig" else value)
