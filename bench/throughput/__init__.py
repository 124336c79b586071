"""Throughput benchmarks: REST search under concurrency, MCP stdio time-to-ready."""
