"""Top terms of clusters by class-based TF-IDF (c-TF-IDF), and labels suggested from them.

c-TF-IDF (as in BERTopic) treats each cluster as one document: a term weighs
``tf(t, c) * log(1 + A / f(t))``, where ``tf`` is the term's share of the cluster's words,
``f(t)`` its count over all clusters and ``A`` the average number of words per cluster.
Words frequent in one cluster and rare elsewhere rank first; words every cluster uses
(``use``, ``make``) sink. Texts that belong to no cluster can be passed as ``background``:
they count in ``f(t)`` only, so generic words are pushed down further.

English stop words are removed before bigrams are formed; tokens start with a letter, so
bare numbers never become terms.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

from memoryd.domains import checks

TOKEN_PATTERN = r"(?u)\b[^\W\d_][\w'-]*[^\W_]\b"
#: Words of chat and code that say nothing about a topic, on top of English stop words.
EXTRA_STOP_WORDS = frozenset(
    {
        "i'm",
        "it's",
        "don't",
        "let's",
        "you're",
        "i've",
        "i'd",
        "that's",
        "can't",
        "here's",
        "want",
        "need",
        "like",
        "just",
        "make",
        "sure",
        "use",
        "using",
        "used",
        "help",
        "thanks",
        "really",
        "think",
        "know",
        "way",
        "good",
        "great",
        "also",
        "example",
        "following",
        "let",
        "ll",
        "ve",
        "re",
    }
)
STOP_WORDS = sorted(ENGLISH_STOP_WORDS | EXTRA_STOP_WORDS)
LABEL_TERMS = 2


def top_terms(
    cluster_texts: Sequence[Sequence[str]],
    *,
    background: Sequence[str] = (),
    n_terms: int = 10,
    min_df: int = 2,
) -> list[list[str]]:
    """The ``n_terms`` highest-weighted terms (unigrams and bigrams) of each cluster.

    ``cluster_texts[i]`` holds the texts of cluster i. ``min_df`` drops terms found in
    fewer texts overall (typos, one-off names); it falls back to 1 when that leaves no
    vocabulary. A cluster with no usable words gets an empty list.

    >>> top_terms([["BGP peering on the edge router", "BGP route maps"],
    ...            ["solar panels on the roof", "solar battery reserve"]], n_terms=1)
    [['bgp'], ['solar']]
    """
    checks.count(n_terms, name="n_terms", minimum=1)
    checks.count(min_df, name="min_df", minimum=1)
    if not cluster_texts:
        return []
    docs = [text for texts in cluster_texts for text in texts] + list(background)
    owner = np.repeat(
        np.arange(len(cluster_texts) + 1), [len(t) for t in cluster_texts] + [len(background)]
    )
    counts, vocab = _count(docs, min_df)
    if counts is None:
        return [[] for _ in cluster_texts]
    weights = ctfidf(_per_class(counts, owner, len(cluster_texts) + 1))[:-1]
    return [_best(row, vocab, n_terms) for row in weights]


def ctfidf(class_counts: np.ndarray) -> np.ndarray:
    """c-TF-IDF weights of a (classes, terms) count matrix (see the module docstring)."""
    counts = np.asarray(class_counts, dtype=np.float64)
    words = counts.sum(axis=1, keepdims=True)
    tf = np.divide(counts, words, out=np.zeros_like(counts), where=words > 0)
    per_term = counts.sum(axis=0)
    average = counts.sum() / max(1, int((words[:, 0] > 0).sum()))
    idf = np.log1p(np.divide(average, per_term, out=np.zeros_like(per_term), where=per_term > 0))
    return tf * idf


def suggest_label(terms: Sequence[str], taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A short lowercase name from a cluster's top terms, not in ``taken``.

    The first two terms that do not repeat a word already used, joined by ``-``
    (``["bgp", "route maps", "bgp peering"]`` → ``"bgp-route-maps"``). Falls back to
    ``"domain"``; a name already taken gets the next unused term, then a number.

    >>> suggest_label(["solar", "solar panels", "battery"])
    'solar-battery'
    """
    words_used: set[str] = set()
    picked: list[str] = []
    for term in terms:
        words = term.split()
        if words_used.isdisjoint(words):
            picked.append(term)
            words_used.update(words)
        if len(picked) == LABEL_TERMS:
            break
    label = _slug(" ".join(picked)) or "domain"
    for term in terms:
        if label not in taken:
            break
        if not words_used.issuperset(term.split()):
            label = _slug(f"{label} {term}")
            words_used.update(term.split())
    base, n = label, 2
    while label in taken:
        label, n = f"{base}-{n}", n + 1
    return label


def _count(docs: list[str], min_df: int) -> tuple[sparse.csr_matrix | None, np.ndarray]:
    for df in dict.fromkeys((min_df, 1)):
        vectorizer = CountVectorizer(
            stop_words=STOP_WORDS,
            ngram_range=(1, 2),
            min_df=df,
            token_pattern=TOKEN_PATTERN,
            lowercase=True,
            dtype=np.float64,
        )
        try:
            counts = vectorizer.fit_transform(docs)
        except ValueError:  # empty vocabulary: only stop words, numbers or nothing
            continue
        return counts, vectorizer.get_feature_names_out()
    return None, np.array([])


def _per_class(counts: sparse.csr_matrix, owner: np.ndarray, classes: int) -> np.ndarray:
    member = sparse.csr_matrix(
        (np.ones(owner.size), (owner, np.arange(owner.size))), shape=(classes, owner.size)
    )
    return np.asarray((member @ counts).todense())


def _best(row: np.ndarray, vocab: np.ndarray, n_terms: int) -> list[str]:
    order = np.argsort(-row, kind="stable")[:n_terms]
    return [str(vocab[i]) for i in order if row[i] > 0]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48].strip("-")
