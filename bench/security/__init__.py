"""Security bench: what the hardening costs (see run.py)."""
