"""The Kubernetes cluster (Magnum or existing) and the autoscaler of its extra node groups."""
