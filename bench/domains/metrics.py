"""Scores of a domain assignment against the conversation each message came from.

- **NMI / ARI** (scikit-learn) of hard labels: each memory's best domain, unclassified
  memories forming one more label ("all"), or left out ("classified only").
- **unclassified share**: memories with no domain at or above the threshold.
- **multi-domain share**: memories with two or more domains.
- **mixed both**: texts joining two short messages whose own best domains differ that get
  both domains; **same multi**: texts joining two messages of one domain that get two or
  more (the false-alarm rate of the same threshold on texts of the same length).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from bench.domains.data import Pairs


def agreement(truth: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """NMI and ARI over all memories (-1 as its own label) and over labelled ones only."""
    kept = labels >= 0
    out = {
        "nmi": normalized_mutual_info_score(truth, labels),
        "ari": adjusted_rand_score(truth, labels),
        "nmi_classified": normalized_mutual_info_score(truth[kept], labels[kept])
        if kept.any()
        else 0.0,
        "ari_classified": adjusted_rand_score(truth[kept], labels[kept]) if kept.any() else 0.0,
        "clusters": int(len(set(labels.tolist()) - {-1})),
        "unlabelled_share": float(np.mean(~kept)),
    }
    return {k: round(float(v), 4) if isinstance(v, float) else v for k, v in out.items()}


def threshold_row(
    scores: np.ndarray,
    truth: np.ndarray,
    pairs: Pairs,
    pair_scores: tuple[np.ndarray, np.ndarray],
    threshold: float,
) -> dict[str, Any]:
    """Every share at one threshold; ``scores`` are (memories, domains), ``pair_scores`` the
    same for the mixed and the same-domain pairs."""
    assigned = scores >= threshold
    best = np.where(assigned.any(axis=1), scores.argmax(axis=1), -1)
    mixed, same = (s >= threshold for s in pair_scores)
    rows = np.arange(len(pairs.mixed_domains))
    both = mixed[rows, pairs.mixed_domains[:, 0]] & mixed[rows, pairs.mixed_domains[:, 1]]
    return {
        "threshold": round(float(threshold), 4),
        "unclassified": round(float(np.mean(~assigned.any(axis=1))), 4),
        "multi_domain": round(float(np.mean(assigned.sum(axis=1) >= 2)), 4),
        "mean_domains": round(float(assigned.sum(axis=1).mean()), 3),
        "mixed_both": round(float(both.mean()), 4),
        "same_multi": round(float(np.mean(same.sum(axis=1) >= 2)), 4),
        **{k: v for k, v in agreement(truth, best).items() if k in ("nmi", "ari")},
    }
