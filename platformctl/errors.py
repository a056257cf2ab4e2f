"""Errors in what the user handed the CLI: it prints each on one line and exits 2."""


class UsageError(Exception):
    """Bad input (a stack name, a plan file, an output directory): not a bug, no traceback."""
