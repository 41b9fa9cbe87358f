"""Graph passes on the integer IR; compiler.py's PIPELINE runs them in order."""
