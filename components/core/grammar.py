"""Grammars of the strings a stack file hands to manifests, URLs, headers, flags and paths.

Leaf module (no imports of ours). Each check takes the whole string (full-match
semantics: a trailing newline is not a match), raises ``ValueError`` with what was
wrong and what is allowed, and returns the value unchanged, so it serves as a
pydantic ``AfterValidator``.
"""

from __future__ import annotations

import ipaddress
import re
from decimal import Decimal, InvalidOperation
from urllib.parse import urlsplit

_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_HOST_NAME = re.compile(rf"({_LABEL}\.)+[a-z]([-a-z0-9]{{0,61}}[a-z0-9])?")
_KEY_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_SEGMENT = r"[A-Za-z0-9][-A-Za-z0-9_.]*"
_RELATIVE_PATH = re.compile(rf"{_SEGMENT}(/{_SEGMENT})*")
_ABSOLUTE_PATH = re.compile(rf"/({_SEGMENT}(/{_SEGMENT})*)?")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

# OCI distribution reference grammar (distribution/reference regexp.go).
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(
    rf"(?P<name>(?:(?P<domain>{_DOMAIN})/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?"
)

# Kubernetes quantity (apimachinery resource.Quantity): number, then a binary or decimal suffix or an exponent.
_QUANTITY = re.compile(r"(?P<number>[0-9]+(\.[0-9]*)?|\.[0-9]+)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?")
_SUFFIX = {
    "": Decimal(1), "m": Decimal("0.001"), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
}

# Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on conditions; Istio's retryOn takes both,
# plus HTTP status codes it turns into retriable-status-codes.
RETRY_CONDITIONS = frozenset({
    "5xx", "gateway-error", "reset", "reset-before-request", "connect-failure", "envoy-ratelimited",
    "retriable-4xx", "refused-stream", "retriable-status-codes", "retriable-headers", "http3-post-connect-failure",
    "cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable",
})

# S3 bucket names (AWS general purpose bucket naming rules).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def _fail(value: str, what: str) -> ValueError:
    return ValueError(f"{value!r} is not {what}")


def _whole(value: str, pattern: re.Pattern, max_length: int, what: str) -> str:
    """value, if it is at most max_length long and pattern matches all of it."""
    if len(value) > max_length or not pattern.fullmatch(value):
        raise _fail(value, what)
    return value


def dns_label(value: str, max_length: int = 63) -> str:
    return _whole(value, _DNS_LABEL, max_length, f"a DNS label (lowercase letters, digits and '-', starting with a "
                  f"letter and ending with a letter or digit, at most {max_length} characters)")


def dns_subdomain(value: str) -> str:
    return _whole(value, _DNS_SUBDOMAIN, 253, "a DNS subdomain (dot-separated lowercase labels of letters, digits "
                  "and '-', at most 253 characters)")


def hostname(value: str) -> str:
    """A fully qualified host name, without wildcards."""
    return _whole(value, _HOST_NAME, 253, "a host name such as models.example.com: lowercase labels of letters, "
                  "digits and '-', each at most 63 characters (no wildcards)")


def host_or_ip(value: str) -> str:
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    if len(value) > 253 or not (_HOST_NAME.fullmatch(value) or _DNS_LABEL.fullmatch(value)):
        raise _fail(value, "a host name or an IP address")
    return value


def qualified_key(value: str, what: str = "label key") -> str:
    """A label or annotation key: an optional DNS-subdomain prefix and '/', then a name of 63 characters."""
    prefix, _, name = value.rpartition("/")
    if (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix))) or not _KEY_NAME.fullmatch(name):
        raise _fail(value, f"a Kubernetes {what} ([prefix/]name: name of at most 63 characters of "
                           "[A-Za-z0-9-_.] starting and ending alphanumeric; prefix a DNS subdomain)")
    return value


def label_value(value: str) -> str:
    return _whole(value, _LABEL_VALUE, 63, "a Kubernetes label value (at most 63 characters of [A-Za-z0-9-_.], "
                  "starting and ending alphanumeric, or empty)")


def text(value: str, max_length: int = 255) -> str:
    """Free text that ends up in an API field: printable, no control characters, not blank."""
    if not value.strip() or value != value.strip() or len(value) > max_length or CONTROL.search(value):
        raise _fail(value, f"printable text of 1-{max_length} characters without control characters "
                           "or leading/trailing spaces")
    return value


def annotation_value(value: str) -> str:
    if len(value) > 4096 or CONTROL.search(value):
        raise _fail(value, "an annotation value of at most 4096 characters without control characters")
    return value


def header_token(value: str, max_length: int = 64) -> str:
    """Text quoted inside an HTTP header (a Basic Auth realm): printable ASCII without quotes or backslashes."""
    if not 1 <= len(value) <= max_length or not re.fullmatch(r'[\x20-\x21\x23-\x5b\x5d-\x7e]+', value):
        raise _fail(value, f"1-{max_length} printable ASCII characters without '\"' or '\\' "
                           "(it is quoted in the WWW-Authenticate header)")
    return value


# Why an image must be pinned: the same text can name another build tomorrow.
_MOVING_TAG = ("without a tag the runtime pulls :latest, and :latest moves: nodes may run different builds "
               "and `pulumi up` sees no change to roll out")


def image_reference(value: str) -> str:
    m = _IMAGE.fullmatch(value)
    if not m or len(m.group("name")) > 255:
        raise _fail(value, "an image reference such as nvcr.io/nvidia/tritonserver:25.01-py3 "
                           "(lowercase repository path, optional registry host, then :tag and/or @digest)")
    if not (m.group("tag") or m.group("digest")):
        raise _fail(value, f"a pinned image: add a :tag or an @sha256: digest ({_MOVING_TAG})")
    if m.group("tag") == "latest" and not m.group("digest"):
        raise _fail(value, f"a pinned image: replace :latest with a release tag or add an @sha256: digest ({_MOVING_TAG})")
    return value


def relative_path(value: str) -> str:
    """A path below some root: segments of [A-Za-z0-9-_.] starting alphanumeric, so never `..` or `/x`."""
    return _whole(value, _RELATIVE_PATH, 1024, "a relative path such as resnet/v1 (segments of letters, digits, '-', "
                  "'_' and '.', each starting with a letter or digit; no '..', no leading or doubled '/')")


def absolute_path(value: str) -> str:
    return _whole(value, _ABSOLUTE_PATH, 1024, "an absolute path such as /exports/models (segments of letters, "
                  "digits, '-', '_' and '.', each starting with a letter or digit; no '..')")


def url(value: str, schemes: tuple[str, ...] = ("https",), path: bool = True) -> str:
    """A URL with one of ``schemes``, a host, an optional port 1-65535; no user:password, query or fragment."""
    allowed = f"a URL such as {schemes[0]}://host.example.com{'/path' if path else ''} ({' or '.join(schemes)}, " \
              f"a host, an optional port 1-65535{', a path' if path else ''}; no user:password, query or fragment)"
    if CONTROL.search(value) or " " in value:
        raise _fail(value, allowed)
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise _fail(value, allowed) from None
    if (parts.scheme not in schemes or not parts.hostname or "@" in parts.netloc or parts.query or parts.fragment
            or "?" in value or "#" in value or port == 0 or (not path and parts.path not in ("", "/"))):
        raise _fail(value, allowed)
    try:
        host_or_ip(parts.hostname)
    except ValueError:
        raise _fail(value, allowed) from None
    if path and ".." in parts.path.split("/"):
        raise _fail(value, allowed)
    return value


def cidr(value: str) -> str:
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise _fail(value, "a CIDR such as 10.0.0.0/24 (network address, no host bits set)") from None
    if "/" not in value:
        raise _fail(value, "a CIDR such as 10.0.0.0/24 (with a prefix length)")
    return value


def ip_address(value: str) -> str:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise _fail(value, "an IP address such as 10.0.0.2") from None
    return value


def bucket_name(value: str) -> str:
    if (not _BUCKET.fullmatch(value) or ".." in value or ".-" in value or "-." in value
            or re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+", value)
            or value.startswith(_BUCKET_PREFIXES) or value.endswith(_BUCKET_SUFFIXES)):
        raise _fail(value, "an S3 bucket name (3-63 lowercase letters, digits, '.' and '-', starting and ending "
                           "with a letter or digit, no '..', not an IP address, not starting with "
                           f"{', '.join(_BUCKET_PREFIXES)} nor ending with {', '.join(_BUCKET_SUFFIXES)})")
    return value


def retry_conditions(value: str) -> str:
    parts = value.split(",")
    bad = [p for p in parts if p not in RETRY_CONDITIONS and not re.fullmatch(r"[1-5][0-9][0-9]", p)]
    if not value or bad:
        raise _fail(value, f"a comma-separated list of Envoy retry conditions ({', '.join(sorted(RETRY_CONDITIONS))}) "
                           "or HTTP status codes, without spaces")
    return value


def quantity(value: str) -> Decimal:
    """A Kubernetes quantity's value (500m -> 0.5, 16Gi -> 17179869184)."""
    m = _QUANTITY.fullmatch(value)
    if not m:
        raise _fail(value, "a Kubernetes quantity such as 500m, 4, 1.5 or 16Gi")
    suffix = m.group("suffix") or ""
    try:
        scale = _SUFFIX[suffix] if suffix in _SUFFIX else Decimal(10) ** int(suffix[1:])
        return Decimal(m.group("number")) * scale
    except (InvalidOperation, OverflowError, ValueError):
        raise _fail(value, "a Kubernetes quantity of a sensible size") from None


def positive_quantity(value: str) -> str:
    if quantity(value) <= 0 or len(value) > 32:
        raise _fail(value, "a positive Kubernetes quantity such as 500m, 4 or 16Gi")
    return value
