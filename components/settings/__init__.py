"""The stack file: its schema, its checks and the one loader. Everything here runs before any
resource exists."""
