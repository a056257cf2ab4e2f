"""What the bucket and upload providers share: no state, inputs checked before any request.

Pulumi runs a dynamic provider in a separate process: it serialises the provider object with
dill into the resource's ``__provider`` input and loads it there. So the provider objects hold
no state at all (no client, lock or credential): every call builds its own client from the
resource's properties, where the credentials arrive as secret inputs. The classes are pickled
by reference, so the provider process (started in the project directory) imports their modules
(bucket.py, upload.py; states written before 0.2 name components/s3bucket.py); they must stay
free of side effects at import time.
"""

from __future__ import annotations

from typing import Any, Optional

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, ResourceProvider

from inference_platform.weights.s3.client import CREDENTIAL_KEYS, endpoint_problem, plain


def has_unknowns(props: dict[str, Any]) -> bool:
    from pulumi.output import Unknown

    return any(isinstance(v, Unknown) for v in props.values())


def _check_common(news: dict[str, Any], failures: list[CheckFailure]) -> None:
    endpoint = news.get("endpoint")
    if isinstance(endpoint, str):
        problem = endpoint_problem(endpoint)
        if problem:
            failures.append(CheckFailure("endpoint", problem))


class S3Provider(ResourceProvider):
    """Shared by both providers: stateless, endpoint checked before any request."""

    # The provider captures nothing secret; the credentials travel as secret inputs.
    serialize_as_secret_always = False

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures: list[CheckFailure] = []
        _check_common(news, failures)
        return CheckResult(news, failures + self._more_failures(news))

    def _more_failures(self, news: dict[str, Any]) -> list[CheckFailure]:
        return []


def resource_inputs(access_key_id, secret_access_key, opts: Optional[pulumi.ResourceOptions]):
    """Credential inputs (secret) and options that keep them secret in the state's outputs too."""
    creds = {"accessKeyId": pulumi.Output.secret(access_key_id), "secretAccessKey": pulumi.Output.secret(secret_access_key)}
    return creds, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=list(CREDENTIAL_KEYS)))


def changed_inputs(olds: dict[str, Any], news: dict[str, Any], keys) -> list[str]:
    """The input keys whose values differ, secrets compared unwrapped."""
    return [k for k in keys if plain(olds.get(k)) != plain(news.get(k))]
