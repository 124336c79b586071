"""Helpers shared by memoryd's tests (importable as ``helpers``; scripts run as subprocesses)."""
