"""Retrieval-quality benchmark of memoryd on BEAM development data (see run.py)."""
