"""Prometheus, prometheus-adapter, Loki, Alloy and Grafana; alert rules and shared metric names."""
