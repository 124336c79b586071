"""Administration of the whole store (``engine.admin``): API keys, the ledger, export and
import, backup, restore, re-embedding, consolidation and garbage collection.
"""
