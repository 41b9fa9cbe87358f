"""Outcomes of every fuzz case run in this session (frontend/test_fuzz_hostile_models.py
fills them in; conftest.py sums them over the xdist workers and prints them)."""
from __future__ import annotations

import collections

STATS = collections.Counter()
FINDINGS = []  # (kind, mutation, message) of cases that were bugs
