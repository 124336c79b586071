"""Emergent domains: topic groups discovered by clustering, soft-assigned, changed only by
accepted proposals.

Pure functions over vectors and texts; nothing here reads or writes a store.

- :mod:`.discover`: accumulate, then sample, reduce, cluster (HDBSCAN) and describe clusters;
- :mod:`.assign`: cosine to every centroid, thresholded into domains; running-mean centroids;
- :mod:`.proposals`: compare a new clustering with the current domains (split, merge, new);
- :mod:`.terms`: c-TF-IDF top terms and suggested names.
"""
