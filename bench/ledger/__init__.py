"""Ledger bench: what the hash-chained audit ledger costs on writes and to verify (see run.py)."""
