"""Config namespaces: which a stack file may use besides the project's, and near misses of ours.

Pulumi passes every `namespace:key` of a stack file to the program and lets a namespace be
anything (a provider reads its own, `openstack:authUrl`). A key under a misspelt project namespace
(`inference-platfrom:production: true`) is therefore silently ignored by Pulumi and by the
program: the stack plans with the key's default. Near misses of ours are refused instead;
namespaces that are not close to ours (`mycompany:owner`) stay allowed, as Pulumi allows them.
"""

from __future__ import annotations

import difflib
from typing import Iterable

from inference_platform.settings.base import NAMESPACE
from inference_platform.settings.errors import KeyPath, RawKey
from inference_platform.settings.stack import Settings

# A provider reads its config under its package name (`pulumi.Config('openstack')` in
# pulumi_openstack/config/vars.py; "name" in each provider's pulumi-plugin.json); `pulumi` is the
# engine's own (`pulumi:tags`, `pulumi:disable-default-providers`). The providers this program
# uses (kubernetes, openstack, random) and the common ones a stack may configure.
KNOWN_NAMESPACES = ("pulumi", "kubernetes", "openstack", "random", "aws", "azure-native", "gcp", "tls", "command")

# The stack file's top-level keys, as written (camelCase).
PROJECT_KEYS = tuple(field.alias or name for name, field in Settings.model_fields.items())

# How close a namespace (or a whole `namespace:key`) must be to ours to count as a misspelling.
_MAX_EDITS = 3
_SIMILAR_KEY = 0.85
_SIMILAR_NAMESPACE = 0.6


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _closest_project_key(key: str) -> str:
    match = difflib.get_close_matches(key, PROJECT_KEYS, n=1, cutoff=0.6)
    return f"{NAMESPACE}:{match[0] if match else key}"


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


def misspelt_namespace(written: str) -> bool:
    """Whether a `namespace:key` outside ours and the providers' looks meant for this project."""
    namespace, _, key = written.partition(":")
    if namespace == NAMESPACE or namespace in KNOWN_NAMESPACES:
        return False
    if edit_distance(namespace.lower(), NAMESPACE) <= _MAX_EDITS:
        return True
    if key in PROJECT_KEYS and _similarity(namespace, NAMESPACE) >= _SIMILAR_NAMESPACE:
        return True
    return any(_similarity(written, f"{NAMESPACE}:{ours}") >= _SIMILAR_KEY for ours in PROJECT_KEYS)


def namespace_problems(keys: Iterable[str]) -> list[tuple[KeyPath, str]]:
    """Config keys (as the engine passes them, `namespace:key`) under a misspelling of the
    project's namespace: each names the closest key of ours."""
    allowed = ", ".join((f"{NAMESPACE} (this project)", *KNOWN_NAMESPACES))
    return [((RawKey(written),), f"namespace {written.partition(':')[0]!r} is not this project's, so Pulumi would "
             f"ignore the key silently; did you mean `{_closest_project_key(written.partition(':')[2])}`? "
             f"Allowed namespaces: {allowed}, or any namespace not close to {NAMESPACE!r}")
            for written in sorted(keys) if ":" in written and misspelt_namespace(written)]


def near_miss_hint(path: KeyPath, other_keys: Iterable[str]) -> str:
    """For a required top-level key that is missing: the same key under another namespace
    (`inference-platfrom:customer`), which was probably meant for it. (A misspelt key in our
    namespace is reported by the schema itself, with the keys allowed.)"""
    if len(path) != 1 or not isinstance(path[0], str):
        return ""
    elsewhere = [k for k in sorted(other_keys) if k.partition(":")[2] == path[0]]
    return f" (the file has `{elsewhere[0]}`: meant for `{NAMESPACE}:{path[0]}`?)" if elsewhere else ""
