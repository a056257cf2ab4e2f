"""The mesh: Istio, Jaeger and Kiali, and the Gateway every service is routed through."""
