"""Knowledge graphs: a user graph and per-project graphs of compact nodes, the
always-loaded core within a token budget, archival with memory traces, the reviewable
``graph.json`` file, project scans and transcript imports.

These modules are pure: they work on :class:`~memoryd.models.kg.Graph` values and
files, never on a store or the engine.
"""
