"""Dashboard benchmark: first paint and time to interactive of the memories view, graph frame rates."""
