"""The Pulumi program: load the stack's settings, build the platform, export outputs."""

import pulumi

from components.config import load_settings
from components.platform import InferencePlatform

settings = load_settings()
platform = InferencePlatform(f"{settings.customer}-{settings.environment}", settings)

if platform.kubeconfig is not None:
    pulumi.export("kubeconfig", pulumi.Output.secret(platform.kubeconfig))
