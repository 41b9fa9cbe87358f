"""The user-facing commands: cli, console, export, signing, budgets, tools, validate, docs."""
