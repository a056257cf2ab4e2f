"""platformctl: the offline plan, diff, configuration reference and benchmark."""
