"""Whole models through the whole compiler: goldens, determinism, regression models, options."""
