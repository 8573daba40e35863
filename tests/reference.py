"""Deliberately simple Semantic Affinity, straight from paper 000 (section 3, Appendix A.1).

Plain Python loops over pairs and tuples; no algebraic shortcuts.  Used only by
the tests as an independent check of the vectorised implementation.
"""

from __future__ import annotations

import itertools
import math


def _cos_dist(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return 1.0 - dot / (na * nb)


def _sq_dist(a, b):
    return sum((x - y) ** 2 for x, y in zip(a, b))


def reference_sa(rows, vec):
    """rows: list of concepts; each concept is a list (one per language) of lists of words.
    vec: dict (language index, word) -> vector (list of floats).
    Returns dict with cosine/euclidean intra, inter, sa.
    """
    L = len(rows[0])
    intra_cos, intra_euc = [], []
    for lang in range(L):
        words = []
        for row in rows:
            for w in row[lang]:
                if w not in words:
                    words.append(w)
        cos_d, sq_d = [], []
        for i in range(len(words)):
            for j in range(i + 1, len(words)):
                a, b = vec[(lang, words[i])], vec[(lang, words[j])]
                cos_d.append(_cos_dist(a, b))
                sq_d.append(_sq_dist(a, b))
        intra_cos.append(sum(cos_d) / len(cos_d))
        intra_euc.append(math.sqrt(sum(sq_d) / len(sq_d)))
    tup_cos, tup_euc = [], []
    for row in rows:
        for tup in itertools.product(*row):
            cos_d, sq_d = [], []
            for i in range(L):
                for j in range(i + 1, L):
                    a, b = vec[(i, tup[i])], vec[(j, tup[j])]
                    cos_d.append(_cos_dist(a, b))
                    sq_d.append(_sq_dist(a, b))
            tup_cos.append(sum(cos_d) / len(cos_d))
            tup_euc.append(math.sqrt(sum(sq_d) / len(sq_d)))
    out = {}
    for name, intra, tups in (("cosine", intra_cos, tup_cos), ("euclidean", intra_euc, tup_euc)):
        d_intra = sum(intra) / L
        d_inter = sum(tups) / len(tups)
        out[name] = {"intra": d_intra, "inter": d_inter, "sa": d_intra / (d_intra + d_inter)}
    return out


def rule_topk(D, k, tol):
    """The documented near-tie rule (semanscope_nb/metrics/ties.py) as a plain loop, smaller = better: each of the
    k positions takes the lowest index among the remaining candidates within ``tol`` of the smallest remaining."""
    out = []
    for row in [list(map(float, r)) for r in D]:
        left = dict(enumerate(row))
        picks = []
        for _ in range(k):
            best = min(left.values())
            j = min(i for i, d in left.items() if d <= best + tol)
            picks.append(j)
            del left[j]
        out.append(picks)
    return out


def rule_rank(row, golds, tol):
    """Rank of the best gold under the rule: 1 for the prediction (lowest index within tol of the best), else
    1 + #(closer by more than tol) + #(within tol and of lower index).  Returns (rank, prediction)."""
    row = [float(x) for x in row]
    best = min(row)
    pred = min(j for j, d in enumerate(row) if d <= best + tol)
    ranks = []
    for g in golds:
        if g == pred:
            ranks.append(1)
            continue
        ahead = sum(1 for j, d in enumerate(row) if d < row[g] - tol or (abs(d - row[g]) <= tol and j < g))
        ranks.append(max(2, 1 + ahead))
    return min(ranks), pred
