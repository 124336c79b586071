"""Retrieval: candidate fusion, diversity re-ranking and prompt-ready formatting."""
