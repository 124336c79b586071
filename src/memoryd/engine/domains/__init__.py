"""Domains (``engine.domains``): discovering them, assigning memories, renaming, merging,
splitting, the threshold and proposals.
"""
