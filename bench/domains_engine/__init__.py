"""Domains in the store and the engine: discovery and re-assignment, the write path with and
without classification, and domain-filtered search, on SQLite and PostgreSQL."""
