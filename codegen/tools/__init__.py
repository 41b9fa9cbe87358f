"""Tools around the compiler: budgets, report, validate, profile, quantize."""
