"""How long things take: the cold-start estimate of a new Triton replica per GPU group, and the
budgets `pulumi up` waits within. Pure functions of the settings, below every component."""
