"""The inference platform's CrossGuard policy pack.

`rules` holds the policies (importable without starting a policy server);
`__main__.py` only builds the PolicyPack the Pulumi CLI runs. The policy names come from the
library (`inference_platform.settings.policies`), which checks a stack's overrides against them:
the pack's virtualenv installs the library (requirements.txt).
"""
