"""VirtualService pieces the routes of services and graphs share."""


def envoy_duration(seconds: float) -> str:
    """A protobuf duration Istio accepts, exact to the millisecond (never `1e-05s`)."""
    millis = round(seconds * 1000)
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"


# What the routes of a Basic Auth workload require: a Basic credential, any. The gateway's
# basic_auth filter (basic_auth.py) checks it before routing and answers 401 itself; should
# that filter ever be missing, a request without one still gets the `unauthorized` route's 401.
BASIC_CREDENTIAL = {"authorization": {"prefix": "Basic "}}


def unauthorized_route(realm: str) -> dict:
    """The route after the credentialed ones (Basic Auth): 401 with the Basic Auth challenge."""
    return {
        "name": "unauthorized",
        "directResponse": {"status": 401, "body": {"string": "Unauthorized\n"}},
        "headers": {"response": {"set": {"WWW-Authenticate": f'Basic realm="{realm}"'}}},
    }
