"""Domain discovery and assignment measured on BEAM (see bench/README.md, "Domains")."""
