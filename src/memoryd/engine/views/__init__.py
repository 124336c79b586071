"""Read-only views (``engine.views``): the change feed, the timeline, the journal, the
overview, the memory graph, and one memory's state, retention curve and importance.
"""
