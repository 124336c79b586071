"""Knowledge-graph bench: core rendering and archival speed, token-count accuracy, and a
simulated project history comparing archival weightings."""
