"""The core memory verbs behind the Engine: plain writes, smart ingest, capture, strength
feedback, links between memories, and the read path (search and recall).
"""
