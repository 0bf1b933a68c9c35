"""CLI command groups, one module per area; each has `register(app)`."""
