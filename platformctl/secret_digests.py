"""Keyed digests of secret inputs, so that `platformctl diff` sees a secret value change
without any plan file holding the value or anything it can be guessed from.

A plan redacts every secret input to `[secret]`. Beside it, the plan records an
HMAC-SHA256 of the value under a key that never enters the plan directory, and an id of
that key. Without the key a digest says nothing, even of a short secret (a plain or
per-plan-salted hash of a Slack channel or a six-letter password could be brute-forced
from the plan alone). Two plans compare their digests only when their key ids match:

- `PLATFORMCTL_DIGEST_KEY` (any text, e.g. a CI secret) is the key where it is set, so plans
  made by two CI jobs compare;
- otherwise a random key kept in `$XDG_STATE_HOME/platformctl/secret-digest.key` (mode 0600),
  so plans made on one machine compare;
- otherwise (no writable state directory) a key for this process only: plans compare only
  when rendered by one command, such as `platformctl diff STACK OTHER_PLAN`.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any, Iterator

from .propertypath import format_path

KEY_ENV = "PLATFORMCTL_DIGEST_KEY"
_KEY_ID_MESSAGE = b"platformctl secret digest key id"


def _key_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "platformctl" / "secret-digest.key"


def _stored_key() -> bytes:
    path = _key_file()
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        pass
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: of two plans started at once, one writes and both read that key.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key.hex())
        return key
    except FileExistsError:
        return bytes.fromhex(path.read_text().strip())
    except OSError:
        return key  # this process only


@functools.cache
def _key_for(env_value: str | None, key_file: str) -> bytes:
    return env_value.encode() if env_value else _stored_key()


def digest_key() -> bytes:
    return _key_for(os.environ.get(KEY_ENV) or None, str(_key_file()))


def key_id(key: bytes) -> str:
    """Names the key (so two plans know whether their digests compare), revealing nothing of it."""
    return hmac.new(key, _KEY_ID_MESSAGE, hashlib.sha256).hexdigest()[:16]


def digest(key: bytes, value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:32]


def secret_digests(wire: Any, is_secret, key: bytes) -> dict[str, str]:
    """Property path (propertypath syntax) -> digest, for every secret-wrapped value in a wire
    value; `is_secret(value)` recognises the wrapper, whose `value` is what is digested."""
    return {format_path(path): digest(key, value) for path, value in _secrets(wire, is_secret, ())}


def _secrets(value: Any, is_secret, path: tuple) -> Iterator[tuple[tuple, Any]]:
    if isinstance(value, dict):
        if is_secret(value):
            yield path, value.get("value")
            return
        for k, v in value.items():
            yield from _secrets(v, is_secret, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _secrets(v, is_secret, path + (i,))
