"""The inference platform's CrossGuard policy pack.

`rules` holds the policies (importable without starting a policy server);
`__main__.py` only builds the PolicyPack the Pulumi CLI runs; `catalog` names every
policy without importing the Policy SDK, so the stack schema can check names.
"""
