"""`tinyaot tune`: per-layer kernel variants measured on the emulator (tune.py)."""
