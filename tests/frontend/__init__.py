"""Loading models: opsets, shapes, QOperator / integer ops, front-end passes, limits, fuzzing."""
