"""Smart waits (``engine.waits``): the service that runs this host's waits, their jobs,
what they may watch, and the system activity they record as memories.
"""
