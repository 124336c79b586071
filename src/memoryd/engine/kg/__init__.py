"""Knowledge graphs (``engine.kg``): the user graph and project graphs, their cache, their
reviewable files, archival, search, sync and importers.
"""
