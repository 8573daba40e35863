"""The original Semanscope tool's "±" for SA: a delta-method error propagation, not a bootstrap.

Paper 000 (App. A.3) says its ± is the std of 1000 bootstrap resamples, but
the tool that produced its tables (GitHub ``digital-duck/semanscope``,
``semanscope/components/semantic_affinity.py``, ``compute_semantic_affinity``
and ``compute_horizontal_spread``; read at commit ``e102edd``) has no
bootstrap.  It propagates two standard errors through ``SR = V / H`` and
``SA = 1 / (1 + SR)``:

* ``H`` (its "horizontal spread") = the mean over the L languages of each
  language's intra spread ``h_l`` (mean cosine distance, or RMS Euclidean
  distance, over the pairs of its unique words), with
  ``sem_H = sd(h_1..h_L; ddof=1) / sqrt(L)``.
* ``s_t = v_t / H`` for every expanded translation tuple t (``v_t`` its inter
  spread: mean cosine / RMS Euclidean distance over the language pairs),
  ``SR = mean(s)``, ``sem_s = sd(s; ddof=1) / sqrt(T)``.
* ``sem_SR = SR * sqrt((sem_s / SR)**2 + (sem_H / H)**2)`` and
  ``sem_SA = sem_SR / (1 + SR)**2``.

So the ± is ``sqrt(within**2 + between**2)`` with two terms
(:class:`DeltaMethodSEM` keeps both):

* ``within = sem_s / (1 + SR)**2``: the standard error of the mean inter
  distance, with every expanded tuple counted as an independent sample (a row
  with 3 x 2 alternatives counts six times).  This is the part that measures
  sampling noise, roughly.
* ``between = SR * (sem_H / H) / (1 + SR)**2``: the spread *across languages*
  of the intra spreads.  With two languages ``sem_H = |h_1 - h_2| / 2`` (their
  sample sd, ``|h_1 - h_2| / sqrt(2)``, over ``sqrt(2)``).  It is a fixed
  property of the two vocabularies, not sampling noise: it does not shrink
  with more concepts, and it is large whenever one language's words sit closer
  together than the other's (USE on the single Chinese characters of DS4).

Compare the bootstrap std of :func:`~semanscope_nb.metrics.affinity.semantic_affinity`
(concept rows resampled) with ``within``, not with ``sem``.  The SA itself is
the same number either way: ``1 / (1 + SR) = H / (H + mean(v)) = D_intra /
(D_intra + D_inter)``.

The tool also has a reading quirk this module does not copy: its horizontal
spread gives every ``|`` alternative of a row the vector of the row's *first*
alternative.  It changes only rows with alternatives (DS4) and only the
intra spread; this module uses each word's own vector.

Layer: metrics.

Example
-------
>>> import numpy as np
>>> r = delta_method_sem([0.5, 0.7], [0.3, 0.4, 0.5], distance="cosine")
>>> round(r.sa, 4), round(r.sem, 4), round(r.between_language_term, 4), round(r.within_term, 4)
(0.6, 0.0529, 0.04, 0.0346)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from semanscope_nb.metrics.spreads import AlignedWords, pow2_exponent, unit_rows
from semanscope_nb.results import Result

Distance = Literal["cosine", "euclidean"]
#: the source the formula was read from (repository, file, commit)
TOOL_SOURCE = ("digital-duck/semanscope", "semanscope/components/semantic_affinity.py",
               "e102eddd0e578ee10887b9903f60482644f9ba9f")


@dataclass(frozen=True)
class DeltaMethodSEM(Result):
    """The original Semanscope tool's ± of SA (delta method) and its two terms; ``sem**2 = within**2 + between**2``."""

    kind = "sa-delta-method-sem"
    main_score_name = "sem"

    distance: str
    sa: float
    sem: float
    #: standard error of the mean tuple distance, each expanded tuple an independent sample (sampling-like)
    within_term: float
    #: the spread across languages of their intra spreads (not sampling noise)
    between_language_term: float
    intra_by_language: tuple[float, ...]
    inter_mean: float
    n_tuples: int

    @property
    def between_share(self) -> float:
        """``between**2 / sem**2``: the share of the ± variance that is the between-language term."""
        return self.between_language_term**2 / self.sem**2 if self.sem > 0 else math.nan


def _check_distance(distance: Any) -> str:
    if distance not in ("cosine", "euclidean"):
        raise ValueError(f"distance must be 'cosine' or 'euclidean', got {distance!r}")
    return distance


def delta_method_sem(
    intra_by_language: Sequence[float], inter_by_tuple: Sequence[float], *, distance: Distance = "cosine"
) -> DeltaMethodSEM:
    """The tool's ± from each language's intra spread and each expanded tuple's inter spread (formula above).

    ``intra_by_language``: ``h_l`` (at least two languages); ``inter_by_tuple``:
    ``v_t`` (at least one tuple).  Degenerate cases follow the tool: one tuple
    gives ``sem_s = 0``; ``SR = 0`` or ``H = 0`` gives a ± of 0.

    >>> delta_method_sem([0.6, 0.6], [0.2, 0.2]).sem  # equal spreads, equal tuples: nothing to propagate
    0.0
    """
    _check_distance(distance)
    h = np.asarray(intra_by_language, dtype=np.float64).ravel()
    v = np.asarray(inter_by_tuple, dtype=np.float64).ravel()
    if h.size < 2:
        raise ValueError(f"intra_by_language needs one spread per language (at least 2), got {h.size}")
    if v.size < 1:
        raise ValueError("inter_by_tuple needs at least one tuple's inter spread")
    if not (np.isfinite(h).all() and np.isfinite(v).all()) or (h < 0).any() or (v < 0).any():
        raise ValueError("spreads must be finite and >= 0")
    H = float(h.mean())
    sem_h = float(h.std(ddof=1) / math.sqrt(h.size))
    if H <= 0:
        return DeltaMethodSEM(distance, math.nan, 0.0, 0.0, 0.0, tuple(map(float, h)), float(v.mean()), int(v.size))
    s = v / H
    sr = float(s.mean())
    sem_s = float(s.std(ddof=1) / math.sqrt(s.size)) if s.size > 1 else 0.0
    slope = 1.0 / (1.0 + sr) ** 2  # |d SA / d SR|
    if sr > 0:
        within, between = sem_s * slope, sr * (sem_h / H) * slope
    else:
        within = between = 0.0
    return DeltaMethodSEM(distance, 1.0 / (1.0 + sr), math.hypot(within, between), within, between,
                          tuple(map(float, h)), float(v.mean()), int(v.size))


def language_intra_spreads(aw: AlignedWords, *, distance: Distance = "cosine") -> np.ndarray:
    """Each language's intra spread over the pairs of its unique words: mean cosine distance or RMS Euclidean distance.

    Uses ``sum_{a<b} ||x_a - x_b||**2 = n * sum_a ||x_a - mean||**2`` (on unit
    vectors for cosine), so no pair is enumerated and nothing cancels.

    >>> import numpy as np, scipy.sparse as sp
    >>> e = np.eye(3); eye = sp.identity(3, format="csr")
    >>> language_intra_spreads(AlignedWords(("en", "de"), (e, e), (eye, eye), ("a", "b", "c"))).tolist()
    [1.0, 1.0]
    """
    _check_distance(distance)
    out = []
    for lang, x in zip(aw.languages, aw.vectors):
        x = np.asarray(x, dtype=np.float64)
        n = x.shape[0]
        if n < 2:
            raise ValueError(f"language '{lang}' has {n} unique word(s): its intra spread needs at least 2")
        if distance == "cosine":
            u, _ = unit_rows(x)
            out.append(float(((u - u.mean(axis=0)) ** 2).sum() / (n - 1)))
        else:
            e = int(pow2_exponent(np.abs(x).max()))
            xs = np.ldexp(x, -e)
            out.append(math.ldexp(math.sqrt(2.0 * ((xs - xs.mean(axis=0)) ** 2).sum() / (n - 1)), e))
    return np.array(out)


def tuple_inter_spreads(aw: AlignedWords, *, distance: Distance = "cosine") -> np.ndarray:
    """The inter spread of every expanded translation tuple (the Cartesian product of each row's alternatives).

    Cosine: the mean of ``1 - cos`` over the language pairs; Euclidean: the RMS
    of the distances.  Rows come in order; within a row, tuples in
    ``itertools.product`` order of the alternatives.

    >>> import numpy as np, scipy.sparse as sp
    >>> e = np.eye(2); eye = sp.identity(2, format="csr")
    >>> tuple_inter_spreads(AlignedWords(("en", "de"), (e, e[::-1]), (eye, eye), ("a", "b"))).tolist()
    [1.0, 1.0]
    """
    _check_distance(distance)
    L = len(aw.languages)
    idx = []
    for r in range(aw.n_rows):
        alts = [inc.indices[inc.indptr[r]:inc.indptr[r + 1]] for inc in aw.incidence]
        idx.extend(itertools.product(*alts))
    idx = np.asarray(idx, dtype=np.intp).reshape(-1, L)
    if distance == "cosine":
        vecs = [unit_rows(np.asarray(v, dtype=np.float64))[0] for v in aw.vectors]
    else:
        e = int(max(pow2_exponent(np.abs(np.asarray(v, dtype=np.float64)).max()) for v in aw.vectors))
        vecs = [np.ldexp(np.asarray(v, dtype=np.float64), -e) for v in aw.vectors]
    acc = np.zeros(idx.shape[0])
    for a, b in itertools.combinations(range(L), 2):
        xa, xb = vecs[a][idx[:, a]], vecs[b][idx[:, b]]
        if distance == "cosine":
            acc += 1.0 - np.einsum("ij,ij->i", xa, xb)
        else:
            acc += ((xa - xb) ** 2).sum(axis=1)
    mean = acc / (L * (L - 1) / 2)
    return mean if distance == "cosine" else np.ldexp(np.sqrt(mean), e)


def tool_sem(aw: AlignedWords, *, distance: Distance = "cosine") -> DeltaMethodSEM:
    """The original tool's ± of the SA of ``aw`` under ``distance`` (see the module docstring).

    >>> import numpy as np, scipy.sparse as sp
    >>> rng = np.random.default_rng(0); en = rng.normal(size=(40, 8)); zh = en + 0.5 * rng.normal(size=(40, 8))
    >>> eye = sp.identity(40, format="csr")
    >>> r = tool_sem(AlignedWords(("en", "zh"), (en, zh), (eye, eye), tuple(map(str, range(40)))))
    >>> r.n_tuples, r.sem > r.within_term > 0
    (40, True)
    """
    return delta_method_sem(language_intra_spreads(aw, distance=distance), tuple_inter_spreads(aw, distance=distance),
                            distance=distance)


def with_delta_method_sem(result: Any, aw: AlignedWords) -> Any:
    """``result`` (an SA result) whose ``.sem`` of each distance is the tool's delta-method ±, with a note saying so.

    The intervals stay the bootstrap's; ``provenance['parameters']['sem']``
    records ``'delta'``.  Used by ``semantic_affinity(..., sem="delta")``.
    """
    scores = {}
    for dist in ("cosine", "euclidean"):
        old = getattr(result, dist)
        r = tool_sem(aw, distance=dist)
        note = (f"{dist}: sem is the original Semanscope tool's delta-method ± ({r.sem:.4g} = sqrt(within {r.within_term:.4g}^2 "
                f"+ between-language {r.between_language_term:.4g}^2)); the between-language term is the difference of "
                "the languages' intra spreads, not sampling noise; the interval is still the bootstrap's")
        scores[dist] = replace(old, sem=r.sem, note="; ".join(n for n in (old.note, note) if n))
    params = {**result.provenance.get("parameters", {}), "sem": "delta"}
    return replace(result, **scores, provenance={**result.provenance, "parameters": params})
