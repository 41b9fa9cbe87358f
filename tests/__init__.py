"""tinyaot's test suite, grouped by layer (docs/testing.md); shared helpers in tests/helpers/."""
