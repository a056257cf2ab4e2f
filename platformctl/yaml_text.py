"""A manifest as YAML text, the bytes PyYAML's `safe_dump(doc, sort_keys=False)` writes, fast.

PyYAML's emitter is pure Python: at a thousand services it took longer than rendering
the plan. libyaml's emitter (PyYAML's `CSafeDumper`: the same representer and resolver,
only the emitter in C) writes the same bytes for most documents but not for all: it
folds long double-quoted scalars at other places (PyYAML lib/yaml/emitter.py
`write_double_quoted` against libyaml 0.2.5 src/emitter.c
`yaml_emitter_write_double_quoted_scalar`), and it takes keys that PyYAML writes as
complex keys (`? key`) as simple ones: an empty key, or one of 128 characters
(`check_simple_key`: `length < 128` against `length > 128`). So libyaml writes only
the documents that keep clear of every such difference: keys of the characters
Kubernetes names and labels use, and `@` (Envoy's `@type`, which both emitters single-quote
when it leads: PyYAML `analyze_scalar` and libyaml `yaml_emitter_analyze_scalar` take a
leading `@` as an indicator, and neither treats it so elsewhere), shorter than 100, and strings of printable ASCII,
which both emitters write plain or single-quoted and fold at the same single spaces
(`write_plain`, `write_single_quoted` against their libyaml twins), or such a line with one
line break after it and no space before that break (a response body, "Not Found\n": both
single-quote it; a space before a break makes both choose double quotes, which they fold
apart). Every other
document goes through PyYAML's own emitter, so the text never depends on which
emitter wrote it (tests/properties/test_manifest_yaml.py compares the two).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_FAST_DUMPER = getattr(yaml, "CSafeDumper", None)  # absent when PyYAML was built without libyaml
_PLAIN_KEY = re.compile(r"[A-Za-z0-9._/@-]{1,99}")


def _printable_ascii(text: str) -> bool:
    return text.isascii() and text.isprintable()


def _libyaml_writes_alike(value: Any) -> bool:
    if isinstance(value, str):
        if value.endswith("\n") and len(value) > 1 and not value.endswith(" \n"):
            return _printable_ascii(value[:-1])
        return _printable_ascii(value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _PLAIN_KEY.fullmatch(k) and _libyaml_writes_alike(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_libyaml_writes_alike(v) for v in value)
    return value is None or isinstance(value, (bool, int, float))


def manifest_yaml(doc: dict[str, Any]) -> str:
    """`yaml.safe_dump(doc, sort_keys=False)`, written by libyaml where its text is the same."""
    if _FAST_DUMPER is not None and _libyaml_writes_alike(doc):
        return yaml.dump(doc, Dumper=_FAST_DUMPER, sort_keys=False)
    return yaml.safe_dump(doc, sort_keys=False)
