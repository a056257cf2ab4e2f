"""Telling secret-looking keys and literal values apart from references to Secrets."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .kube import REDACTED, is_list

_WORDS = ("password", "passwd", "secret", "token", "apikey", "accesskey", "privatekey", "credential")
# Keys that hold a credential itself even though they end like a reference ("...key").
_CREDENTIAL_ENDINGS = ("secretkey", "apikey", "accesskey", "accesskeyid", "privatekey", "secretaccesskey")
# Keys that name where a secret lives (existingSecret, secretName, passwordKey, tokenFile, ...).
_REFERENCE_ENDINGS = (
    "name", "names", "ref", "file", "path", "dir", "key", "keys", "enabled", "policy",
    "ttl", "audience", "audiences", "mount", "type", "create", "annotations", "labels",
    # where a token is fetched from (Grafana's auth.generic_oauth token_url), not a token;
    # a URL that carries credentials itself is still caught (url_with_credentials)
    "url", "uri",
)
_URL_CREDENTIALS = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s]*:[^/@\s]+@", re.IGNORECASE)


def _normal(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def secret_like(key: Any) -> bool:
    """Whether a key or variable name says its value is a credential."""
    n = _normal(str(key))
    if not any(w in n for w in _WORDS):
        return False
    if n.endswith(_CREDENTIAL_ENDINGS):
        return True
    return not (n.startswith("existing") or n.endswith(_REFERENCE_ENDINGS))


def literal(value: Any) -> bool:
    """A value written into the program: a non-empty string that is not redacted and not a
    reference expanded at run time (`${VAR}`, `$(VAR)`, `{{ template }}`)."""
    if not isinstance(value, str) or not value or value == REDACTED:
        return False
    return not (value.startswith(("${", "$(")) or "{{" in value)


def url_with_credentials(value: Any) -> bool:
    """A literal URL with a password in it (`scheme://user:password@host`)."""
    return literal(value) and bool(_URL_CREDENTIALS.match(value))


def secret_literals(value: Any, path: str = "") -> Iterator[str]:
    """Paths of secret-looking keys holding literal strings anywhere inside `value`."""
    if isinstance(value, Mapping):
        for key in value:
            child = value[key]
            here = f"{path}.{key}" if path else str(key)
            if (secret_like(key) and literal(child)) or url_with_credentials(child):
                yield here
            else:
                yield from secret_literals(child, here)
    elif is_list(value):
        for i, child in enumerate(value):
            yield from secret_literals(child, f"{path}[{i}]")


def parse_document(text: Any) -> Any:
    """A ConfigMap value parsed as JSON or YAML when it is a document, else None."""
    if not isinstance(text, str) or ("\n" not in text and not text.lstrip().startswith(("{", "["))):
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        import yaml  # the pulumi SDK depends on PyYAML
    except ImportError:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None
