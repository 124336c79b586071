"""Task memory and intentions (``engine.tasks``).
"""
