"""VirtualService pieces the routes of services and graphs share."""


def envoy_duration(seconds: float) -> str:
    """A protobuf duration Istio accepts, exact to the millisecond (never `1e-05s`)."""
    millis = round(seconds * 1000)
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"


# What the routes of a Basic Auth workload require: one Basic credential, any. The gateway's
# basic_auth filter (basic_auth.py) checks it and answers 401 itself; the route is chosen on
# the header as the client sent it. A full match of one `Basic <base64>` value; without a
# credential the `unauthorized` route answers 401. A request that adds a bare username as a
# second Authorization value, to get past the gateway's DENY policy, is not forwarded at Envoy
# 1.38 (repeated headers are joined with ',' before matching a route: source/common/http/
# header_utility.h getAllOfHeaderAsString), but is from Envoy 1.39 (`match_headers_individually`):
# the policy's `Basic *` rule (basic_auth.py gateway_policy_spec) denies it under both.
BASIC_CREDENTIAL = {"authorization": {"regex": "Basic [A-Za-z0-9+/]+={0,2}"}}


def unauthorized_route(realm: str) -> dict:
    """The route after the credentialed ones (Basic Auth): 401 with the Basic Auth challenge."""
    return {
        "name": "unauthorized",
        "directResponse": {"status": 401, "body": {"string": "Unauthorized\n"}},
        "headers": {"response": {"set": {"WWW-Authenticate": f'Basic realm="{realm}"'}}},
    }
