"""Issue 20: anything read back is checked against what it claims to be.

- an embedding-cache row holding NaN or inf -- with a digest that matches its bytes -- is damage:
  dropped, named in one warning and re-encoded;
- a projection-cache entry carries its key and a digest of its content: another projection's file
  copied over the key's file, a changed coordinate or NaN coordinates are rejected (recomputed, with
  a warning);
- a job file copied over another job's file is not resumed, on the serial and the loky backend.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import semanscope_nb as snb
from semanscope_nb.errors import CacheWarning
from semanscope_nb.models.encoders import RandomEncoder

# --------------------------------------------------------------------------- embedding cache rows


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_cache_row_with_non_finite_values_and_a_matching_digest_is_damage(tmp_path, bad):
    enc = RandomEncoder(dim=16)
    texts = ["water", "fire", "sun"]
    with snb.EmbeddingCache(tmp_path) as cache:
        good = cache.embed(enc, texts)
    poisoned = good[1].copy()
    poisoned[3] = bad
    blob = poisoned.astype(np.float32).tobytes()
    con = sqlite3.connect(tmp_path / "embeddings.sqlite")  # a row whose digest matches its (bad) bytes
    con.execute("UPDATE vectors SET vec=?, digest=? WHERE text=?", (blob, hashlib.blake2b(blob, digest_size=16).digest(), "fire"))
    con.commit()
    con.close()
    with snb.EmbeddingCache(tmp_path) as cache, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = cache.embed(enc, texts)
        stats = cache.last_stats
    said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(said) == 1 and "1 damaged entry" in said[0] and "'fire'" in said[0], said
    assert np.isfinite(again).all()
    np.testing.assert_array_equal(again, good, err_msg="the re-encoded row equals the original (a deterministic encoder)")
    assert stats.n_damaged == 1 and stats.n_encoded == 1, stats
    with snb.EmbeddingCache(tmp_path) as cache:  # the row was replaced: read quietly now
        with warnings.catch_warnings():
            warnings.simplefilter("error", CacheWarning)
            np.testing.assert_array_equal(cache.embed(enc, texts), good)


# --------------------------------------------------------------------------- projection cache


def _points(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((12, 5))


def _project(x: np.ndarray, cache):
    from semanscope_nb.plots.projection import project

    return project(x, method="pca", words=[f"w{i}" for i in range(len(x))], cache=cache)


def _fresh(folder: Path):
    from semanscope_nb.plots.projection import ProjectionCache

    return ProjectionCache(folder=folder)


def _reread(folder: Path, x: np.ndarray):
    """Project ``x`` with a new cache object on ``folder``: (projection, cache warnings, cache)."""
    cache = _fresh(folder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = _project(x, cache)
    return p, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)], cache


def test_projection_cache_serves_a_sound_entry_from_disk(tmp_path):
    x = _points(0)
    first = _project(x, _fresh(tmp_path))
    p, said, cache = _reread(tmp_path, x)
    assert p.from_cache and cache.disk_hits == 1 and said == []
    np.testing.assert_array_equal(p.coords, first.coords)


def test_projection_cache_rejects_another_projections_file_copied_over_the_key(tmp_path):
    a, b = _points(0), _points(1)
    pa, pb = _project(a, _fresh(tmp_path)), _project(b, _fresh(tmp_path))
    shutil.copyfile(tmp_path / f"{pb.key}.npz", tmp_path / f"{pa.key}.npz")  # b's entry under a's key
    p, said, cache = _reread(tmp_path, a)
    assert not p.from_cache and cache.computed == 1
    assert len(said) == 1 and pa.key in said[0] and "another key" in said[0], said
    np.testing.assert_allclose(p.coords, pa.coords, rtol=0, atol=1e-12, err_msg="recomputed: a's own coordinates")
    assert _reread(tmp_path, a)[0].from_cache  # the rewritten entry is sound


@pytest.mark.parametrize("damage", ["nan", "changed", "old-format"])
def test_projection_cache_rejects_a_changed_or_non_finite_entry(tmp_path, damage):
    x = _points(2)
    first = _project(x, _fresh(tmp_path))
    path = tmp_path / f"{first.key}.npz"
    with np.load(path, allow_pickle=False) as z:
        fields = {k: z[k] for k in z.files}
    coords = fields["coords"].copy()
    if damage == "nan":  # NaN coordinates under a digest that matches them: the finiteness check must catch it
        coords[:] = np.nan
        fields["digest"] = np.array(_fresh(tmp_path).entry_digest(first.key, coords, str(fields["params"]), str(fields["notes"])))
    elif damage == "changed":
        coords[0, 0] += 1.0
    else:  # a file written before entries carried their key and digest
        fields.pop("key", None)
        fields.pop("digest", None)
    fields["coords"] = coords
    np.savez(path, **fields)
    p, said, cache = _reread(tmp_path, x)
    assert not p.from_cache and cache.computed == 1 and np.isfinite(p.coords).all()
    assert len(said) == 1 and first.key in said[0] and "recomputing" in said[0], said
    np.testing.assert_allclose(p.coords, first.coords, rtol=0, atol=1e-12, err_msg="PCA is deterministic")


# --------------------------------------------------------------------------- job files


def _datasets():
    from semanscope_nb.data.words import dataset_from_frame

    words = ["water", "fire", "sun", "moon", "tree", "house", "dog", "cat", "bird", "fish", "stone", "rain"]
    german = ["Wasser", "Feuer", "Sonne", "Mond", "Baum", "Haus", "Hund", "Katze", "Vogel", "Fisch", "Stein", "Regen"]
    big = dataset_from_frame(pd.DataFrame({"english": words, "german": german}), name="big")
    small = dataset_from_frame(pd.DataFrame({"english": words[:5], "german": german[:5]}), name="small")
    return big, small


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
@pytest.mark.parametrize("backend", ["serial", "loky"])
def test_job_file_copied_over_another_is_recomputed_on_every_backend(tmp_path, backend):
    from semanscope_nb.runs.grid import JobFileWarning, run_grid

    big, small = _datasets()
    kw = dict(metrics=["sa"], params={"sa": {"n_boot": 20}}, out_dir=tmp_path / "results", cache=tmp_path / "cache",
              progress=False)
    run_grid(["random-null"], [big, small], **kw)
    runs = tmp_path / "results" / "runs"
    (big_file,) = runs.glob("*__big__*.json")
    (small_file,) = runs.glob("*__small__*.json")
    shutil.copyfile(small_file, big_file)  # the small dataset's numbers under the big one's name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = run_grid(["random-null"], [big, small], backend=backend, n_jobs=2, **kw)
    said = [str(w.message) for w in caught if issubclass(w.category, JobFileWarning)]
    assert len(said) == 1 and big_file.name in said[0] and "recomputing" in said[0], said
    board = g.leaderboard().set_index("dataset")
    assert int(board.loc["big", "n_concepts"]) == 12 and int(board.loc["small", "n_concepts"]) == 5, board
    assert '"name": "big"' in big_file.read_text() or '"dataset": "big"' in big_file.read_text()


@pytest.mark.parametrize("key", ["../../../escaped", "/tmp/absolute-key", "..", ".hidden", "a/b"])
def test_projection_cache_entries_stay_inside_the_folder_whatever_the_key(tmp_path, key):
    folder = tmp_path / "x" / "projections"
    cache = _fresh(folder)
    coords = np.arange(6, dtype=np.float64).reshape(3, 2)
    cache.put(key, coords, {"n_components": 2}, 0.1)
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert len(written) == 1 and written[0].startswith("x/projections/") and "/." not in written[0], written
    entry = _fresh(folder).get(key, shape=(3, 2))  # read back by a new cache object: from disk
    assert entry is not None
    np.testing.assert_array_equal(entry[0], coords)
