"""Scale bench: SQLite vs PostgreSQL latency, build cost and concurrent throughput (see run.py)."""
