"""Codebase memory (``engine.codebase``): patterns and decisions of a codebase and what
touches its files.
"""
