"""Every chart builder that needs no model weights, built on small real or random inputs (for tests that render them all).

Not a test module: ``tests/test_chart_ticks.py`` renders each chart to SVG and checks its text.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

import semanscope_nb as snb


def sa_table() -> pd.DataFrame:
    """Three models x two datasets of seeded SA numbers (the leaderboard columns the SA figures read)."""
    rows = []
    rng = np.random.default_rng(2)
    for model, base in (("use-multilingual", 0.75), ("multilingual-e5-small", 0.55), ("random-null", 0.45)):
        for ds in ("conceptual-space", "edge-cases"):
            sa = base + rng.uniform(-0.05, 0.05)
            rows.append({"model": model, "display_name": model.upper(), "dataset": ds, "sa_cosine": sa, "sem_cosine": 0.01,
                         "sa_euclidean": sa - 0.05, "sem_euclidean": 0.02, "tier": snb.metrics.DEFAULT_TIERS.classify(sa)})
    return pd.DataFrame(rows)


def _sweep_table() -> pd.DataFrame:
    rows = []
    for anchors, signal in (("words", "word"), ("sentences", "sentence")):
        for mapping in ("procrustes", "MIM"):
            for n, rho in ((100, 0.31), (300, 0.38), (1000, 0.42), (3000, 0.44)):
                rows.append({"dataset": "bcws", "n_sentences": n, "anchors": anchors, "signal": signal, "mapping": mapping,
                             "rho": rho, "ci_low": rho - 0.02, "ci_high": rho + 0.02})
    rows.append({"dataset": "bcws", "n_sentences": 0, "anchors": "none", "signal": "word", "mapping": "orig",  # a reference
                 "rho": 0.25, "ci_low": 0.23, "ci_high": 0.27})
    return pd.DataFrame(rows)


def gallery() -> dict[str, Callable[[], Any]]:
    """name -> a function building that chart (each builds its own inputs: a failing one names itself)."""
    from semanscope_nb.metrics.affinity import affinity_of_words
    from semanscope_nb.metrics.classification import knn_classification
    from semanscope_nb.metrics.pairs import pair_affinity
    from semanscope_nb.metrics.retrieval import bitext_retrieval
    from semanscope_nb.plots import compare, csc_charts, maps, paper, retrieval_charts, sa_figures, word_similarity_charts
    from semanscope_nb.plots.projection import ProjectionSettings, project_dataset
    from semanscope_nb.runs.evaluate import aligned_words

    cache: dict[str, Any] = {}

    def words() -> Any:
        if "words" not in cache:
            ds = snb.load_dataset("conceptual-space", languages=["en", "zh", "de"]).subset(range(30))
            vectors = snb.embed(ds, "random-null", cache=False).vectors
            aw = aligned_words(ds, vectors)
            result = affinity_of_words(aw, n_boot=100, seed=0).with_provenance(model="random-null", dataset=ds.name)
            proj = project_dataset(ds, vectors, settings=ProjectionSettings("pca"), cache=False)
            cache["words"] = (ds, aw, result, proj)
        return cache["words"]

    def csc() -> Any:
        if "csc" not in cache:
            from test_csc import SENTS

            out = {}
            for name, sents in (("tiny", SENTS), ("tiny2", SENTS[:4])):
                corpus = snb.SentenceCorpus.from_sentences(sents, language="en", name=name)
                r = snb.concept_separation(corpus, "random-null", n_boot=50, cache=False, length_buckets=(0, 5))
                out[(r.model, r.corpus)] = r
            cache["csc"] = out
        return cache["csc"]

    rng = np.random.default_rng(0)
    src, tgt = rng.normal(size=(60, 16)), rng.normal(size=(60, 16))
    tgt[:40] = src[:40] + 0.3 * rng.normal(size=(40, 16))
    labels = [f"topic {i % 4}" for i in range(60)]

    return {
        "tier_bar_chart": lambda: sa_figures.tier_bar_chart(sa_table()),
        "sa_heatmap": lambda: sa_figures.sa_heatmap(sa_table()),
        "worst_concepts_chart": lambda: sa_figures.worst_concepts_chart(words()[2], n=10),
        "pair_heatmap": lambda: sa_figures.pair_heatmap(pair_affinity(words()[1], n_boot=50, seed=0).table),
        "pair_heatmap_delta": lambda: sa_figures.pair_heatmap(pair_affinity(words()[1], n_boot=50, seed=0).table, value="delta"),
        "alignment_map": lambda: maps.alignment_map(words()[3], words()[2], dataset=words()[0]),
        "compare_maps": lambda: compare.compare_maps({"A": (words()[3], words()[2]), "B": (words()[3], words()[2])},
                                                     dataset=words()[0]),
        "csc_chart": lambda: csc_charts.csc_chart(next(iter(csc().values()))),
        "csc_grid": lambda: csc_charts.csc_grid(csc()),
        "csc_heatmap": lambda: csc_charts.csc_heatmap(csc()),
        "csc_length_chart": lambda: csc_charts.csc_length_chart(next(iter(csc().values()))),
        "rank_histogram": lambda: retrieval_charts.rank_histogram(bitext_retrieval(src, tgt, n_boot=50)),
        "accuracy_at_k_chart": lambda: retrieval_charts.accuracy_at_k_chart(bitext_retrieval(src, tgt, n_boot=50)),
        "classification_table": lambda: retrieval_charts.classification_table(
            knn_classification(src[:40], labels[:40], src[40:], labels[40:], n_boot=50)),
        "word_similarity_sweep_chart": lambda: word_similarity_charts.word_similarity_sweep_chart(_sweep_table(), human=0.6),
        "paper_tier_chart": lambda: paper.paper_tier_chart(sa_table()),
        "paper_heatmap": lambda: paper.paper_heatmap(sa_table()),
        # narrow variants: where ticks run into each other first
        "worst_concepts_chart_narrow": lambda: sa_figures.worst_concepts_chart(words()[2], n=8, width=140),
        "alignment_map_side_panels": lambda: maps.alignment_map(words()[3], words()[2], dataset=words()[0], navigate=True,
                                                                worst_concepts=8),
        "tier_bar_chart_narrow": lambda: sa_figures.tier_bar_chart(sa_table(), width=220),
        "csc_chart_narrow": lambda: csc_charts.csc_chart(next(iter(csc().values())), width=180),
        "csc_length_chart_narrow": lambda: csc_charts.csc_length_chart(next(iter(csc().values())), width=150),
        "word_similarity_sweep_chart_narrow": lambda: word_similarity_charts.word_similarity_sweep_chart(
            _sweep_table(), width=180),
    }
