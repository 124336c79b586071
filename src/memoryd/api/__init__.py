"""The HTTP face: a FastAPI app over the engine."""
