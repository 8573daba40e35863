"""One result shape (issue 18): every registered result kind, built for real on tiny data, round-trips
through ``to_dict`` / ``from_dict`` and through ``save`` / ``Result.load``; ``main_score`` is a float
property, ``summary()`` is flat JSON, and every interval is a :class:`~semanscope_nb.results.Interval`
that JSON writes as a 2-element list.

Each builder calls the package's real functions (the registered tasks where there is one) on small
random vectors or the offline ``random-null`` model, with few bootstrap resamples; nothing is faked.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
import re

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import semanscope_nb as snb  # noqa: E402
import semanscope_nb.metrics.workflow  # noqa: E402,F401  (registers its kinds)
import semanscope_nb.runs.alignment  # noqa: E402,F401
import semanscope_nb.runs.contextual  # noqa: E402,F401
import semanscope_nb.runs.grid  # noqa: E402,F401
import semanscope_nb.runs.mteb  # noqa: E402,F401
from semanscope_nb.errors import DatasetError  # noqa: E402
from semanscope_nb.results import Estimate, Interval, Result, result_kinds  # noqa: E402

N_BOOT = 30


# --------------------------------------------------------------------------- tiny real inputs


def _aligned(n_rows: int = 40, dims: int = 8, languages=("en", "de", "xx"), seed: int = 0):
    from semanscope_nb.metrics.spreads import AlignedWords

    rng = np.random.default_rng(seed)
    e = rng.normal(size=(n_rows, dims))
    vectors = [e] + [e + 0.4 * rng.normal(size=e.shape) for _ in languages[1:-1]] + [rng.normal(size=e.shape)]
    eye = sp.identity(n_rows, format="csr")
    return AlignedWords(tuple(languages), tuple(vectors), tuple(eye for _ in languages), tuple(f"c{i}" for i in range(n_rows)))


def _two_sa():
    rng = np.random.default_rng(3)
    e = rng.normal(size=(40, 8))
    good = snb.semantic_affinity({"en": e, "de": e + 0.2 * rng.normal(size=e.shape)}, n_boot=N_BOOT, seed=0)
    noise = snb.semantic_affinity({"en": e, "de": rng.normal(size=e.shape)}, n_boot=N_BOOT, seed=0)
    return good, noise


def _bitext():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 8))
    return snb.metrics.bitext_retrieval(x, x + 0.8 * rng.normal(size=x.shape), ks=(1, 3), n_boot=N_BOOT, seed=0)


def _corpus():
    from semanscope_nb.data.sentences import SentenceCorpus

    return SentenceCorpus.from_sentences(
        ["The train leaves at noon.", "Water the plants every day.", "She reads a long book.", "The dog sleeps in the garden.",
         "We walk to the old market.", "He opens the window slowly."], language="en", name="six")


def _dictionary():
    from semanscope_nb.data.dictionaries import BilingualDictionary

    pairs = (("water", "Wasser"), ("fire", "Feuer"), ("tree", "Baum"), ("house", "Haus"), ("dog", "Hund"), ("cat", "Katze"),
             ("book", "Buch"), ("car", "Auto"), ("bank", "Bank"), ("bank", "Ufer"))
    return BilingualDictionary("toy", "en", "de", pairs)


def _token_corpus(language: str, sentences: list[list[str]], seed: int):
    """An encoded corpus of random word vectors (the container encode_corpus fills from a token encoder)."""
    from semanscope_nb.metrics.contextual import EncodedCorpus
    from semanscope_nb.models.tokens import TokenEmbeddings

    rng = np.random.default_rng(seed)
    toks = []
    for words in sentences:
        text = " ".join(words)
        starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
        offsets = np.array([[s, s + len(w)] for s, w in zip(starts, words)], dtype=np.int64)
        toks.append(TokenEmbeddings(text, tuple(words), offsets, rng.normal(size=(len(words), 6)).astype(np.float32),
                                    np.ones(len(words), dtype=np.int64), (1,), "word", "random-tokens"))
    return EncodedCorpus(language, tuple(" ".join(w) for w in sentences), tuple(toks), {"model": "random-tokens"})


def build(kind: str) -> Result:
    """A real instance of result ``kind`` (see the module docstring)."""
    from semanscope_nb.metrics import chance, contextual, retrieval

    if kind == "sa":
        return snb.run_task("sa", "edge-cases", "random-null", languages=["en", "zh", "de"], n_boot=N_BOOT, cache=False)
    if kind == "pair-sa":
        return snb.run_task("pair-sa", "edge-cases", "random-null", languages=["en", "zh", "de"], n_boot=N_BOOT, cache=False)
    if kind == "permutation":
        return snb.run_task("permutation", "edge-cases", "random-null", languages=["en", "zh"], n_perm=50, cache=False)
    if kind == "retrieval":
        return snb.run_task("retrieval", "edge-cases", "random-null", languages=["en", "zh", "de"], ks=[1, 3],
                            n_boot=N_BOOT, cache=False)
    if kind == "bdi":
        return snb.run_task("bdi", "edge-cases", "random-null", languages=["en", "de"], ks=[1, 3], n_boot=N_BOOT, cache=False)
    if kind == "projection":
        return snb.run_task("projection", "edge-cases", "random-null", languages=["en", "zh"], method="pca", cache=False)
    if kind == "csc":
        return snb.run_task("csc", _corpus(), "random-null", n_boot=N_BOOT, cache=False)
    if kind == "null-aware":
        return chance.null_aware_bootstrap(_aligned(), n_boot=N_BOOT, seed=0, thresholds=snb.metrics.DEFAULT_TIERS)
    if kind == "chance-level":
        return chance.chance_level(_aligned())
    if kind == "surface-null":
        aw = _aligned(languages=("en", "de"))
        rng = np.random.default_rng(6)
        spelling = dataclasses.replace(aw, vectors=tuple(rng.normal(size=v.shape) for v in aw.vectors))
        return chance.surface_null(aw, spelling, n_boot=N_BOOT, seed=0)
    if kind == "comparison":
        aw = _aligned(languages=("en", "de"))
        rng = np.random.default_rng(5)
        bad = dataclasses.replace(aw, vectors=(aw.vectors[0], rng.normal(size=aw.vectors[1].shape)))
        return snb.metrics.compare_models({"good": aw, "bad": bad}, n_boot=N_BOOT, n_perm=50, seed=0)
    if kind == "bitext":
        return _bitext()
    if kind == "mining":
        rng = np.random.default_rng(2)
        x = rng.normal(size=(60, 16))
        return retrieval.bucc_mining(x, x + 0.3 * rng.normal(size=x.shape), n_gold=10, n_distractors=20, seed=0)
    if kind == "classification":
        rng = np.random.default_rng(0)
        centres = rng.normal(size=(3, 8)) * 3
        y_tr, y_te = np.repeat(["a", "b", "c"], 10), np.repeat(["a", "b", "c"], 4)
        X_tr = centres[np.repeat([0, 1, 2], 10)] + rng.normal(size=(30, 8))
        X_te = centres[np.repeat([0, 1, 2], 4)] + rng.normal(size=(12, 8))
        return snb.metrics.knn_classification(X_tr, y_tr, X_te, y_te, ks=(1, 3), n_boot=N_BOOT, seed=0)
    if kind == "retrieval-score":
        return contextual.precision_at_k([0, 3, 1, -1, 0, 2, 7, 0], ks=(1, 5), n_boot=N_BOOT, seed=0, pool_size=10)
    if kind == "sense-separation":
        rng = np.random.default_rng(4)
        v = rng.normal(size=(6, 5))
        return contextual.sense_separation(v, ["bank", "shore", "bank", "money", "bank", "shore"],
                                           ["river", "river", "money", "money", "river", "river"])
    if kind == "csc-grid":
        return snb.metrics.concept_separation_grid(["random-null", "no-such-model"], [_corpus()], n_boot=0, cache=False,
                                                   progress=False)
    if kind == "csc-preview":
        from semanscope_nb.metrics.csc.preview import perturbation_preview

        return perturbation_preview("Jag dricker kaffe varje morgon.", "random-null", language="sv", fuzz_terms="en | ett",
                                    negation_terms="inte", cache=False)
    if kind == "code-switched":
        from semanscope_nb.metrics.codeswitch import code_switch

        return code_switch(["The red house.", "A red car by the house", "Nothing here."], _dictionary_cs(), rate=0.5, seed=0)
    if kind == "diagnostic-report":
        good, noise = _two_sa()
        return snb.metrics.diagnostic_report({"DS1": good, "DS2": noise})
    if kind == "alignment-report":
        from semanscope_nb.runs.alignment import alignment_report

        return alignment_report({"before": "random-null", "after": "random-null"}, _dictionary(), ks=(1, 3), n_boot=N_BOOT,
                                cache=False)
    if kind == "contextual-report":
        return _contextual_report()
    if kind == "mteb":
        from semanscope_nb.runs.mteb import MtebResult, bitext_entry

        entry = bitext_entry(_bitext(), subset="deu-eng", languages=["deu-Latn", "eng-Latn"])
        return MtebResult("Tatoeba", "9080400", {"test": [entry, {**entry, "hf_subset": "fra-eng", "main_score": 0.5}]},
                          evaluation_time=2.25, model={"name": "semanscope/random-null", "revision": "1"})
    if kind == "sa-delta-method-sem":
        from semanscope_nb.metrics.paper_sem import tool_sem

        return tool_sem(_aligned())
    if kind in ("contextual-word-similarity", "annotator-agreement", "word-similarity-sweep"):
        from semanscope_nb.metrics.word_similarity import annotator_agreement, contextual_word_similarity

        rng = np.random.default_rng(11)
        a = rng.normal(size=(30, 6))
        score = contextual_word_similarity(a, a + rng.normal(size=a.shape), rng.uniform(size=30), n_boot=N_BOOT, seed=0,
                                           provenance={"dataset": "toy"})
        human = annotator_agreement(rng.uniform(size=(12, 4)), n_boot=N_BOOT, seed=0)
        if kind == "contextual-word-similarity":
            return score
        if kind == "annotator-agreement":
            return human
        from semanscope_nb.runs.word_similarity import WordSimilaritySweep

        row = {"dataset": "bcws", "n_sentences": 0, "anchors": "none", "signal": "-", "mapping": "orig", "rho": score.rho,
               "ci_low": score.ci.low, "ci_high": score.ci.high, "sem": score.sem, "n_pairs": score.n_pairs, "n_anchors": None}
        return WordSimilaritySweep(table=pd.DataFrame([row]), human=human, provenance={"model": "toy"})
    if kind == "sense-retrieval":
        from semanscope_nb.metrics.btsr import sense_retrieval_scores

        rng = np.random.default_rng(12)
        C = rng.normal(size=(8, 5))
        Q = C + 0.3 * rng.normal(size=C.shape)
        return sense_retrieval_scores(Q, C, np.eye(8, dtype=bool), baseline_queries=rng.normal(size=C.shape),
                                      baseline_candidates=C, ks=(1, 3), n_boot=N_BOOT, seed=0)
    if kind == "model-report":
        import tempfile

        from semanscope_nb.runs.model_report import model_report

        work = Path(tempfile.mkdtemp(prefix="snb-report-"))
        return model_report(["random-null", "tfidf-char"], languages=["en", "zh"], datasets=["edge-cases"], n_boot=N_BOOT,
                            seed=0, tatoeba=False, sib200=False, csc=False, work_dir=work / "work", cache=False,
                            progress=False, n_perm=100)
    if kind == "metric-record":  # what a function registered the old way (register_metric) returned
        from semanscope_nb.runs.grid import MetricRecord

        x = np.random.default_rng(0).normal(size=(20, 4))
        norms = np.linalg.norm(x, axis=1)
        return MetricRecord({"mean_norm": float(norms.mean()), "n": int(norms.size), "norms": norms.tolist()}, "mean_norm",
                            {"model": "random"})
    raise KeyError(f"no builder for result kind {kind!r}: add one to tests/test_results.py")


def _dictionary_cs():
    from semanscope_nb.data.dictionaries import BilingualDictionary

    return BilingualDictionary("toy", "en", "de", (("house", "Haus"), ("red", "rot"), ("the", "das"), ("car", "Auto")))


def _contextual_report():
    """The report contextual_comparison returns, assembled from its real parts on random word vectors."""
    from semanscope_nb.metrics import contextual as cx
    from semanscope_nb.runs.contextual import ContextualReport, _row

    en = _token_corpus("en", [["the", "dog", "sleeps"], ["a", "red", "car"], ["the", "dog", "reads"]], seed=0)
    de = _token_corpus("de", [["der", "Hund", "schläft"], ["ein", "rotes", "Auto"], ["der", "Hund", "liest"]], seed=1)
    anchors = {"avg": cx.avg_type_anchors([("dog", "Hund"), ("car", "Auto"), ("red", "rotes")], en, de, seed=0)}
    rng = np.random.default_rng(7)
    S, T = rng.normal(size=(6, 6)), rng.normal(size=(8, 6))
    src, tgt = [f"s{i}" for i in range(6)], [f"t{i}" for i in range(8)]
    gold = [(f"s{i}", f"t{i}") for i in range(6)]
    rows = []
    for method in ("nn", "csls"):
        r = cx.lexicon_induction_vectors(S, src, T, tgt, gold, method=method, ks=(1, 5), knn=3, n_boot=N_BOOT, seed=0)
        rows.append(_row("de", "none", "orig", f"BDI-{method}", r))
    score = cx.precision_at_k([0, 1, 4, -1, 0], ks=(1, 5), n_boot=N_BOOT, seed=0, pool_size=8)
    rows.append(_row("de", "none", "orig", "BTSR", score))
    return ContextualReport(pd.DataFrame(rows), {"de": anchors}, ["a note"], {"parameters": {"n_boot": N_BOOT}})


# --------------------------------------------------------------------------- comparison helpers

_INTERVAL_NAME = re.compile(r"^(ci|.*_ci)$")


def assert_same(a, b, where: str, *, loose: bool = False) -> None:
    """Equal in every field, exactly (serialisation must not change a number); NaN equals NaN.

    ``loose`` (provenance only): JSON metadata, where an array comes back as a list and a tuple as a list.
    """
    if isinstance(a, pd.DataFrame):
        assert isinstance(b, pd.DataFrame), f"{where}: {type(b).__name__} instead of a DataFrame"
        assert list(a.columns) == list(b.columns), f"{where}: columns {list(b.columns)} != {list(a.columns)}"
        assert len(a) == len(b), f"{where}: {len(b)} rows != {len(a)}"
        for c in a.columns:
            assert a[c].dtype == b[c].dtype, f"{where}[{c}]: dtype {b[c].dtype} != {a[c].dtype}"
            for i, (x, y) in enumerate(zip(a[c].tolist(), b[c].tolist())):
                assert_same(x, y, f"{where}[{c}][{i}]", loose=loose)
        return
    if isinstance(a, np.ndarray) or (loose and isinstance(b, np.ndarray)):
        if loose:
            a, b = np.asarray(a), np.asarray(b)
        assert isinstance(b, np.ndarray), f"{where}: {type(b).__name__} instead of an array"
        assert a.shape == b.shape, f"{where}: shape {b.shape} != {a.shape}"
        assert a.dtype.kind == b.dtype.kind, f"{where}: dtype {b.dtype} != {a.dtype}"
        for i, (x, y) in enumerate(zip(a.ravel().tolist(), b.ravel().tolist())):
            assert_same(x, y, f"{where}.flat[{i}]")
        return
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), f"{where}: {type(b).__name__} != {type(a).__name__}"
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}", loose=loose or f.name == "provenance")
        return
    if isinstance(a, dict):
        assert isinstance(b, dict), f"{where}: {type(b).__name__} instead of a dict"
        assert list(a) == list(b), f"{where}: keys {list(b)} != {list(a)}"
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]", loose=loose or k == "provenance")
        return
    if isinstance(a, (list, tuple)):
        if loose:
            assert isinstance(b, (list, tuple)), f"{where}: {type(b).__name__} instead of a sequence"
        else:
            assert type(a) is type(b), f"{where}: {type(b).__name__} != {type(a).__name__}"
        assert len(a) == len(b), f"{where}: length {len(b)} != {len(a)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]", loose=loose)
        return
    if isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), f"{where}: {b!r} != nan"
        return
    assert a == b, f"{where}: {b!r} != {a!r}"
    assert _sort(a) == _sort(b), f"{where}: type {type(b).__name__} != {type(a).__name__}"


def _sort(x):
    """The type that must survive a round trip (a NumPy scalar may come back as the Python one)."""
    for name, types in (("bool", (bool, np.bool_)), ("int", (int, np.integer)), ("float", (float, np.floating))):
        if isinstance(x, types):
            return name
    return type(x)


def intervals_in_object(x, name: str = "", found: list | None = None) -> list:
    """(where, value) of every interval slot of a result object: fields named ``ci`` / ``*_ci``,
    and the values of ``intervals`` / ``interval`` dicts (table cells of ``*_ci`` columns too)."""
    found = [] if found is None else found
    if isinstance(x, pd.DataFrame):
        for c in x.columns:
            if _INTERVAL_NAME.match(str(c)):
                found += [(f"{name}[{c}]", v) for v in x[c]]
        return found
    if isinstance(x, Result) or (dataclasses.is_dataclass(x) and not isinstance(x, type)):
        for f in dataclasses.fields(x):
            v = getattr(x, f.name)
            if _INTERVAL_NAME.match(f.name):
                found.append((f"{name}.{f.name}", v))
            elif f.name in ("intervals", "interval"):
                found += [(f"{name}.{f.name}[{k!r}]", iv) for k, iv in v.items()]
            else:
                intervals_in_object(v, f"{name}.{f.name}", found)
        return found
    if isinstance(x, dict):
        for k, v in x.items():
            intervals_in_object(v, f"{name}[{k!r}]", found)
    elif isinstance(x, (list, tuple)) and not isinstance(x, Interval):
        for i, v in enumerate(x):
            intervals_in_object(v, f"{name}[{i}]", found)
    return found


def intervals_in_json(x, name: str = "", found: list | None = None) -> list:
    """(where, value) of every interval in a ``to_dict()`` output: keys ``ci`` / ``*_ci``, the values of
    ``intervals`` / ``interval``, and the cells of ``*_ci`` columns of an encoded table."""
    found = [] if found is None else found
    if isinstance(x, dict):
        if set(x) == {"columns", "rows"}:  # an encoded DataFrame
            for j, c in enumerate(x["columns"]):
                if _INTERVAL_NAME.match(str(c)):
                    found += [(f"{name}[{c}]", row[j]) for row in x["rows"]]
            return found
        for k, v in x.items():
            if _INTERVAL_NAME.match(str(k)):
                found.append((f"{name}.{k}", v))
            elif k in ("intervals", "interval") and isinstance(v, dict):
                found += [(f"{name}.{k}[{kk!r}]", iv) for kk, iv in v.items()]
            else:
                intervals_in_json(v, f"{name}.{k}", found)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            intervals_in_json(v, f"{name}[{i}]", found)
    return found


#: kinds whose results hold at least one interval (so the interval checks below are never vacuous for them)
WITH_INTERVALS = {"sa", "null-aware", "pair-sa", "comparison", "bitext", "retrieval", "classification", "retrieval-score", "bdi",
                  "csc", "csc-grid", "diagnostic-report", "alignment-report", "contextual-report"}


def package_kinds() -> dict[str, type[Result]]:
    """The registered kinds whose class the package defines (not an example class a doctest registered)."""
    import sys

    return {k: c for k, c in result_kinds().items()
            if c.__module__.startswith("semanscope_nb.") and getattr(sys.modules[c.__module__], c.__qualname__, None) is c}


@pytest.fixture(scope="module")
def built():
    """One real instance of every registered kind (built once: several tests read them)."""
    return {kind: build(kind) for kind in sorted(package_kinds())}


ALL_KINDS = sorted(package_kinds())


def test_every_kind_is_built_and_registered_once():
    expected = {"sa", "null-aware", "chance-level", "permutation", "pair-sa", "comparison", "bitext", "retrieval", "mining",
                "classification", "retrieval-score", "bdi", "sense-separation", "csc", "csc-grid", "csc-preview",
                "code-switched", "diagnostic-report", "alignment-report", "contextual-report", "mteb", "projection",
                "metric-record"}
    assert expected <= set(package_kinds()), sorted(expected - set(package_kinds()))
    for kind, cls in package_kinds().items():
        assert issubclass(cls, Result) and cls.kind == kind
        assert cls.__dataclass_params__.frozen, f"{cls.__name__} is mutable"
        assert isinstance(inspect.getattr_static(cls, "main_score"), property), f"{cls.__name__}.main_score is not a property"


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_round_trip_through_dict_and_json(kind, built):
    r = built[kind]
    assert type(r).kind == kind
    d = r.to_dict()
    text = json.dumps(d, allow_nan=False)  # strict JSON: NaN and numpy values already converted
    back = type(r).from_dict(json.loads(text))
    assert_same(r, back, kind)
    assert_same(r, type(r).from_dict(d), kind)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_round_trip_through_files(kind, built, tmp_path):
    r = built[kind]
    path = r.save(tmp_path / f"{kind}.json")
    on_disk = json.loads(open(path, encoding="utf-8").read())
    assert on_disk["kind"] == kind and on_disk["format"] >= 1
    back = Result.load(path)
    assert type(back) is type(r)
    assert_same(r, back, kind)
    assert_same(r, type(r).load(path), kind)
    # what save wrote is still what from_dict reads (the extra kind / format keys are ignored)
    assert_same(r, type(r).from_dict(on_disk), kind)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_main_score_summary_and_estimates(kind, built):
    r = built[kind]
    assert isinstance(r.main_score, float)
    if r.main_score_name:  # the named field or property gives the same number (an Estimate: its value)
        # (a name like 'accuracy@1' is read through the result's own value(): BitextResult of lexicon induction)
        named = r.value(r.main_score_name) if "@" in r.main_score_name else getattr(r, r.main_score_name)
        named = named.value if isinstance(named, Estimate) else named
        assert_same(float(named), r.main_score, f"{kind}.main_score")
    else:
        assert math.isnan(r.main_score)  # a map has no score
    s = r.summary()
    assert isinstance(s, dict) and s
    for k, v in s.items():
        assert isinstance(k, str) and (v is None or isinstance(v, (bool, int, float, str))), f"{kind}.summary()[{k!r}] = {v!r}"
    json.dumps(s)  # NaN allowed here: a table row, not a file
    est = r.estimates()
    assert isinstance(est, dict)
    for name, e in est.items():
        assert isinstance(e, Estimate) and isinstance(e.ci, Interval), f"{kind}.estimates()[{name!r}]"
        assert isinstance(e.value, (int, float)) and isinstance(e.sem, float)
    if kind in WITH_INTERVALS:
        assert est, f"{kind}: estimates() is empty although the result holds intervals"


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_one_interval_shape(kind, built):
    r = built[kind]
    in_object = intervals_in_object(r)
    for where, iv in in_object:
        assert isinstance(iv, Interval), f"{kind}{where}: {type(iv).__name__} {iv!r} is not an Interval"
    in_json = intervals_in_json(r.to_dict())
    for where, iv in in_json:
        assert isinstance(iv, list) and len(iv) == 2 and all(x is None or isinstance(x, (int, float)) for x in iv), \
            f"{kind}{where}: {iv!r} is not a [low, high] pair"
    assert len(in_json) == len(in_object), f"{kind}: {len(in_object)} intervals in the object, {len(in_json)} in its JSON"
    if kind in WITH_INTERVALS - {"pair-sa", "comparison", "contextual-report", "diagnostic-report"}:  # tables: low / high columns
        assert in_object, f"{kind}: no interval found, the check above would be vacuous"


def test_estimates_carry_the_numbers_of_the_result(built):
    sa = built["sa"]
    e = sa.estimates()["sa_cosine"]
    assert (e.value, e.sem, e.ci) == (sa.cosine.sa, sa.cosine.sem, sa.cosine.ci)
    assert sa.estimates()["chance.delta"] == sa.chance.delta
    b = built["bitext"]
    eb = b.estimates()
    assert set(eb) == set(b.intervals), "every bootstrapped statistic of a bitext result has its estimate"
    assert eb["accuracy@3"].value == b.accuracy[3] and eb["accuracy@3"].ci == b.intervals["accuracy@3"]
    assert eb["f1"].value == b.f1 and eb["mrr"].value == b.mrr and math.isnan(eb["f1"].sem)
    c = built["comparison"]
    row = c.scores.set_index("model").loc["good"]
    assert c.estimates()["good"] == Estimate(row.score, row["sem"], Interval(row.ci_low, row.ci_high))
    pairs = built["pair-sa"]
    first = pairs.table.iloc[0]
    est = pairs.estimates()[f"{first.language_a}-{first.language_b}"]
    assert (est.value, est.ci) == (first.sa, (first.ci_low, first.ci_high))


def test_new_sem_columns_are_the_bootstrap_std(built):
    """The ``sem`` columns added for estimates() hold the std (ddof=1) of the very bootstrap that gave the interval."""
    from semanscope_nb.metrics.artefacts import subset_languages
    from semanscope_nb.metrics.chance import null_aware_bootstrap, resample_counts
    from semanscope_nb.metrics.row_order import canonical_rows
    from semanscope_nb.metrics.chance import NullParts, null_aware_statistics
    from semanscope_nb.metrics.pairs import pair_affinity
    from semanscope_nb.metrics.spreads import Spreads

    aw = _aligned(languages=("en", "de"))
    rng = np.random.default_rng(5)
    bad = dataclasses.replace(aw, vectors=(aw.vectors[0], rng.normal(size=aw.vectors[1].shape)))
    c = built["comparison"]
    assert c.excluded_concepts == 0  # no artefacts: every concept is judged; the compared score is SA - chance
    sp_ = {n: Spreads(m) for n, m in {"good": aw, "bad": bad}.items()}
    parts = {n: NullParts(m, sp_[n]) for n, m in {"good": aw, "bad": bad}.items()}
    order = canonical_rows(aw)  # the comparison's resamples: over the concepts in canonical order (metrics.row_order)
    boot = {n: np.concatenate([null_aware_statistics(sp_[n], parts[n], k)["delta"]
                               for k in resample_counts(aw.n_rows, N_BOOT, seed=0, order=order)])
            for n in ("good", "bad")}
    for name in ("good", "bad"):
        values = boot[name].tolist()
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
        np.testing.assert_allclose(c.scores.set_index("model").loc[name, "sem"], sd, rtol=1e-12,
                                   err_msg="same resamples, same formula: only the summation order differs")
    diff = (boot["good"] - boot["bad"]).tolist()
    mean = sum(diff) / len(diff)
    sd = math.sqrt(sum((v - mean) ** 2 for v in diff) / (len(diff) - 1))
    np.testing.assert_allclose(c.pairs["sem"].iloc[0], sd, rtol=1e-12, err_msg="paired differences of the same resamples")

    aw3 = _aligned()
    table = pair_affinity(aw3, n_boot=N_BOOT, seed=0).table
    for row in table.itertuples():
        s = null_aware_bootstrap(subset_languages(aw3, (row.language_a, row.language_b)), n_boot=N_BOOT, seed=0)
        assert row.n_excluded == 0 and (row.sem, row.delta_sem) == (s.sa.sem, s.delta.sem)
    d = built["diagnostic-report"]
    good, noise = _two_sa()
    assert d.stage1["sem"].tolist() == [good.cosine.sem, noise.cosine.sem]


def test_load_reads_files_written_before_results_named_their_kind(built, tmp_path):
    """CSCResult / BitextResult / ClassificationResult.save used to write to_dict() alone (no kind)."""
    for kind in ("csc", "bitext", "classification"):
        r = built[kind]
        old = tmp_path / f"old-{kind}.json"
        old.write_text(json.dumps(r.to_dict()), encoding="utf-8")
        assert_same(r, type(r).load(old), kind)
        with pytest.raises(DatasetError, match="no 'kind'"):
            Result.load(old)  # the base class cannot tell which kind it is


def test_load_refuses_other_kinds_and_damaged_files(built, tmp_path):
    path = built["bitext"].save(tmp_path / "b.json")
    with pytest.raises(DatasetError, match="holds a 'bitext' result, not a 'csc' result"):
        snb.metrics.CSCResult.load(path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "no-such-kind"}', encoding="utf-8")
    with pytest.raises(DatasetError, match="unknown result kind 'no-such-kind'"):
        Result.load(bad)
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(DatasetError, match="bad.json: not a semanscope_nb result file"):
        Result.load(bad)


def test_results_are_frozen(built):
    for kind, r in built.items():
        first = dataclasses.fields(r)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(r, first, getattr(r, first))


def test_percentile_intervals_match_plain_quantiles():
    """The helper that replaced affinity.py's stand-ins for scipy's result: row-wise equal-tailed quantiles."""
    from semanscope_nb.metrics.chance import percentile_intervals

    rng = np.random.default_rng(0)
    dist = rng.normal(size=(3, 101))
    dist[1, :7] = np.nan
    dist[2, :] = np.nan
    ci = percentile_intervals(dist, 0.9)
    assert isinstance(ci, Interval)
    for k in range(2):
        v = sorted(x for x in dist[k].tolist() if not math.isnan(x))
        n = len(v)

        def q(p):  # NumPy's default ("linear") quantile, written out
            h = (n - 1) * p
            lo = math.floor(h)
            return v[lo] + (h - lo) * (v[min(lo + 1, n - 1)] - v[lo])

        np.testing.assert_allclose([ci.low[k], ci.high[k]], [q(0.05), q(0.95)], rtol=1e-12, err_msg="linear interpolation")
    assert math.isnan(ci.low[2]) and math.isnan(ci.high[2])
