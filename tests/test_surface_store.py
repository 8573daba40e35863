"""Issue 21: the surface baseline's bootstrap statistics on disk (metrics/surface_store.py).

A fresh process (here: a fresh in-memory memo) reads the baseline's statistics from the
store and gives the numbers of a fresh bootstrap; a damaged or foreign file is detected and
recomputed; a read-only or locked folder is a temporary condition (computed, kept in memory,
the file left alone); writes are atomic.
"""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from semanscope_nb.memo import Memo
from semanscope_nb.metrics import chance, surface_store
from semanscope_nb.metrics.chance import surface_null, verdict_bootstrap
from semanscope_nb.metrics.spreads import AlignedWords
from semanscope_nb.metrics.surface_store import SurfaceStore
from test_fused_verdict import RTOL, _aw_with_alternatives


def _case() -> tuple[AlignedWords, AlignedWords, np.ndarray]:
    aw, _ = _aw_with_alternatives(10, R=60)
    rng = np.random.default_rng(11)
    spelling = AlignedWords(aw.languages, tuple(v + 1.5 * rng.normal(size=v.shape) for v in aw.vectors), aw.incidence,
                            aw.labels, words=aw.words)
    return aw, spelling, np.arange(aw.n_rows) >= 6


@pytest.fixture
def store(tmp_path, monkeypatch) -> SurfaceStore:
    """A fresh memo (a new process) and a store in ``tmp_path``."""
    s = SurfaceStore(tmp_path / "surface-null")
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))
    monkeypatch.setattr(chance, "_SURFACE_STORE", s)
    return s


def _same(got, want, why: str) -> None:
    for g, w in ((got.surface_corrected, want.surface_corrected), (got.difference, want.difference),
                 (got.model_corrected, want.model_corrected)):
        np.testing.assert_allclose([g.value, g.sem, *g.ci], [w.value, w.sem, *w.ci], rtol=RTOL, err_msg=why)


def _counting_spreads(monkeypatch) -> list:
    built = []
    real = chance.Spreads
    monkeypatch.setattr(chance, "Spreads", lambda a, **kw: built.append(a) or real(a, **kw))
    return built


def test_a_fresh_process_reads_the_baselines_statistics_from_disk(store, monkeypatch):
    aw, spelling, keep = _case()
    first = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=spelling)
    assert len(list(store.folder.glob("*.bin"))) == 1 and store.misses == 1
    assert not list(store.folder.glob("*.tmp")), "no temporary file is left behind"
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))  # a new process: nothing in memory
    built = _counting_spreads(monkeypatch)
    other = AlignedWords(aw.languages, tuple(1.1 * v + 0.05 for v in aw.vectors), aw.incidence, aw.labels, words=aw.words)
    again = verdict_bootstrap(other, n_boot=60, seed=3, keep=keep, surface=spelling)
    assert store.hits == 1 and len(built) == 1, "only the model's spreads are built: the baseline's are read from disk"
    fresh = surface_null(other, spelling, keep=keep, n_boot=60, seed=3)  # computed from scratch, no store
    _same(again.surface, fresh, "the disk's baseline gives the numbers of a fresh bootstrap")
    assert again.surface.surface_corrected.to_dict() == first.surface.surface_corrected.to_dict(), \
        "float64 round trip: the very numbers"
    # another seed, n_boot or concept set is another file
    verdict_bootstrap(other, n_boot=60, seed=4, keep=keep, surface=spelling)
    verdict_bootstrap(other, n_boot=50, seed=3, keep=keep, surface=spelling)
    verdict_bootstrap(other, n_boot=60, seed=3, keep=np.arange(aw.n_rows) >= 7, surface=spelling)
    assert len(list(store.folder.glob("*.bin"))) == 4 and store.hits == 1


def test_a_random_seed_is_never_stored(store):
    aw, spelling, keep = _case()
    verdict_bootstrap(aw, n_boot=40, seed=None, keep=keep, surface=spelling)
    assert not store.folder.exists() or not list(store.folder.iterdir())


@pytest.mark.parametrize("damage", ["truncated", "bit flip", "empty", "foreign key", "other version", "not ours",
                                    "wrong length"])
def test_a_damaged_or_foreign_file_is_detected_and_recomputed(store, monkeypatch, damage):
    aw, spelling, keep = _case()
    want = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=spelling)
    (path,) = store.folder.glob("*.bin")
    raw = path.read_bytes()
    if damage == "truncated":
        bad = raw[: len(raw) // 2]
    elif damage == "bit flip":
        i = len(raw) - 100  # inside the distribution
        bad = raw[:i] + bytes([raw[i] ^ 0x10]) + raw[i + 1:]
    elif damage == "empty":
        bad = b""
    elif damage == "foreign key":  # a valid file of another key under this name
        bad = surface_store._encode((np.float64(0.9), np.full(60, 0.9)), b"\x01" * 20)
    elif damage == "other version":  # written by another package version, under this name
        with monkeypatch.context() as m:
            m.setattr(surface_store, "_package_version", lambda: "0.0.1-other")
            bad = surface_store._encode((np.float64(0.9), np.full(60, 0.9)), store._full_key(b"x"))
    elif damage == "wrong length":  # a well-formed file of this very key holding 59 resamples, not 60
        n_version = struct.unpack_from("<HH", raw, 8)[1]
        full_key = raw[12 + n_version: 12 + n_version + 20]
        bad = surface_store._encode((np.float64(0.9), np.full(59, 0.9)), full_key)
    else:
        bad = b"PK\x03\x04 a zip file, not a store file" * 10
    path.write_bytes(bad)
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))
    built = _counting_spreads(monkeypatch)
    got = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=spelling)
    assert store.damaged == (0 if damage == "wrong length" else 1) and len(built) == 2, \
        f"{damage}: detected, and the baseline bootstrapped again"
    _same(got.surface, want.surface, f"{damage}: the recomputed numbers")
    assert path.read_bytes() == raw, f"{damage}: the file is rewritten with the right statistics"
    assert store.get(b"never written") is None


def test_a_locked_or_unreadable_file_is_temporary_not_damage(store, monkeypatch):
    aw, spelling, keep = _case()
    want = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=spelling)
    (path,) = store.folder.glob("*.bin")
    raw = path.read_bytes()
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))
    real_read = type(path).read_bytes

    def locked(self):
        if self.suffix == ".bin":
            raise PermissionError(13, "locked by another process", str(self))
        return real_read(self)

    monkeypatch.setattr(type(path), "read_bytes", locked)
    real_replace = os.replace
    monkeypatch.setattr(surface_store.os, "replace",
                        lambda a, b: (_ for _ in ()).throw(PermissionError(13, "locked", str(b))))
    with pytest.warns(RuntimeWarning, match="kept in memory only"):
        got = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=spelling)
    _same(got.surface, want.surface, "computed while the file is locked")
    assert store.damaged == 0 and store.errors >= 2, "a lock is counted as an error, never as damage"
    monkeypatch.setattr(surface_store.os, "replace", real_replace)
    monkeypatch.setattr(type(path), "read_bytes", real_read)
    assert path.read_bytes() == raw, "the locked file is left alone"
    assert not list(store.folder.glob("*.tmp")), "the failed write leaves no temporary file"


def _read_only(monkeypatch) -> None:
    """The store's folder turns read-only: EROFS from the temporary file's creation (root ignores chmod)."""
    def read_only(**kw):
        raise OSError(errno.EROFS, "Read-only file system", str(kw.get("dir")))

    monkeypatch.setattr(surface_store.tempfile, "mkstemp", read_only)


def test_a_read_only_folder_keeps_the_statistics_in_memory(store, monkeypatch):
    """A read-only folder (EROFS from the temporary file's creation; root ignores chmod, so it is raised here)."""
    aw, spelling, keep = _case()
    _read_only(monkeypatch)
    with pytest.warns(RuntimeWarning, match="kept in memory only"):
        first = verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=spelling)
    assert store.errors == 1 and store.damaged == 0 and len(chance._SURFACE_DONE) == 1
    built = _counting_spreads(monkeypatch)
    again = verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=spelling)
    assert len(built) == 1, "the statistics are still read from memory"
    _same(again.surface, first.surface, "from memory")


def test_the_store_can_be_switched_off_and_then_reads_and_writes_no_file(store, monkeypatch):
    """``settings.surface_store = False`` (SEMANSCOPE_SURFACE_STORE=0): in memory only, the same numbers."""
    from semanscope_nb.settings import settings

    aw, spelling, keep = _case()
    monkeypatch.setenv("SEMANSCOPE_SURFACE_STORE", "0")
    assert settings.surface_store is False
    off = verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=spelling)
    assert not store.folder.exists() or not any(store.folder.iterdir()), "no file written"
    assert store.hits == store.misses == store.errors == 0, "the folder is never asked"
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))  # a fresh process
    monkeypatch.delenv("SEMANSCOPE_SURFACE_STORE")
    on = verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=spelling)
    assert len(list(store.folder.glob("*.bin"))) == 1 and store.misses == 1, "switched on again: written"
    _same(on.surface, off.surface, "the store never changes a number")


def test_a_full_disk_keeps_the_statistics_in_memory(store, monkeypatch):
    """A write that fails mid-way (ENOSPC) warns once, leaves no file and keeps the statistics in memory."""
    aw, spelling, keep = _case()

    real_fdopen = surface_store.os.fdopen

    class Full:
        def __init__(self, fd, mode):
            self.fh = real_fdopen(fd, mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(surface_store.os, "fdopen", Full)
    with pytest.warns(RuntimeWarning, match="kept in memory only"):
        verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=spelling)
    verdict_bootstrap(aw, n_boot=40, seed=4, keep=keep, surface=spelling)  # warned once only (pytest would show a 2nd)
    assert store.errors == 2 and len(chance._SURFACE_DONE) == 2
    assert not list(store.folder.iterdir()), "neither a file nor a temporary file"


def test_the_default_folder_follows_the_cache_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("SEMANSCOPE_CACHE", str(tmp_path / "c"))
    assert SurfaceStore().folder == tmp_path / "c" / "surface-null"


def test_the_store_keeps_at_most_max_files_dropping_the_least_recently_used(tmp_path):
    s = SurfaceStore(tmp_path, max_files=3)
    for k in range(3):
        assert s.put(bytes([k]) * 20, (np.float64(k), np.full(5, float(k))))
        os.utime(s.path(bytes([k]) * 20), ns=(10**18 + k, 10**18 + k))  # written in order 0, 1, 2
    assert s.get(bytes([0]) * 20) is not None  # read: now the most recently used
    assert s.put(bytes([3]) * 20, (np.float64(3), None))
    assert sorted(p.name for p in tmp_path.glob("*.bin")) == sorted(s.path(bytes([k]) * 20).name for k in (0, 2, 3)), \
        "the least recently used (1) is removed"
    assert s.get(bytes([1]) * 20) is None and s.get(bytes([3]) * 20) == (np.float64(3), None)
    with pytest.raises(ValueError, match="max_files"):
        SurfaceStore(tmp_path, max_files=0)


def test_a_data_sets_verdict_in_a_fresh_process_reads_the_baseline_from_disk_with_the_same_result(tmp_path, monkeypatch):
    """End to end on a bundled data set (tfidf-word as the model, the real tfidf-char baseline): the second
    process's verdict reads the store and its result is the first's, number for number."""
    import semanscope_nb as snb
    from semanscope_nb.runs import task_library

    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))
    store = chance._SURFACE_STORE  # the default one: in this test's SEMANSCOPE_CACHE
    assert store.folder == Path(os.environ["SEMANSCOPE_CACHE"]) / "surface-null", "this test's own cache folder"
    ds = snb.load_dataset("edge-cases").select(["en", "de", "fr"]).subset(range(30))
    embedded = snb.embed(ds, "tfidf-word", cache=tmp_path / "c", progress=False)
    first = task_library.sa_task(embedded, n_boot=100, seed=1)
    (path,) = store.folder.glob("*.bin")
    hits = store.hits
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))  # a new process
    built = _counting_spreads(monkeypatch)
    again = task_library.sa_task(embedded, n_boot=100, seed=1)
    assert store.hits == hits + 1 and not built, "the baseline's statistics come from the file: no Spreads of it"
    assert again.surface.to_dict() == first.surface.to_dict(), "the very numbers of the first process's comparison"
    assert again.tier == first.tier and again.cosine.sa == first.cosine.sa


# --------------------------------------------------------------------------- a baseline known by what determines it


def _lazy_case() -> tuple[AlignedWords, AlignedWords, np.ndarray]:
    """The model (12 dims) and a 20-dim baseline (so it cannot be the model's words), with a zero-vector word."""
    aw, _ = _aw_with_alternatives(10, R=60)
    rng = np.random.default_rng(12)
    W = rng.normal(size=(12, 20))
    vecs = [v @ W + 1.5 * rng.normal(size=(v.shape[0], 20)) for v in aw.vectors]
    vecs[1][3] = 0.0  # a word the baseline cannot embed: its concepts leave the comparison
    spelling = AlignedWords(aw.languages, tuple(vecs), aw.incidence, aw.labels, words=aw.words)
    return aw, spelling, np.arange(aw.n_rows) >= 6


def _lazy(spelling: AlignedWords, identity: bytes = b"baseline of data set A", *, fail: bool = False,
          dims: int = 20) -> tuple[AlignedWords, list]:
    """``spelling`` with BaselineVectors (``identity``); the list records each read (``fail``: a read is an error)."""
    reads: list = []

    def load():
        if fail:
            raise AssertionError("the baseline's vectors were read although its statistics are stored")
        reads.append(identity)
        return spelling.vectors

    vectors = chance.BaselineVectors(identity, load, n_languages=len(spelling.languages), dims=dims)
    return AlignedWords(spelling.languages, vectors, spelling.incidence, spelling.labels, words=spelling.words), reads


def test_a_fresh_process_reads_a_baseline_known_by_its_identity_without_its_vectors(store, monkeypatch):
    aw, spelling, keep = _lazy_case()
    lazy, reads = _lazy(spelling)
    first = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=lazy)
    assert reads and store.misses == 1 and len(list(store.folder.glob("*.bin"))) == 1, "a miss: read, computed, stored"
    (path,) = store.folder.glob("*.bin")
    id_key = chance._identity_key(aw, lazy, keep, seed=3, n_boot=60)
    assert path == store.path(id_key), "the file is named by the identity's key"
    value = store.get(id_key)
    assert len(value) == 3 and value[2].tolist() == chance._surface_rows(aw, spelling, keep).tolist(), \
        "the file holds the compared concepts: the kept ones without the zero-vector word's"
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))  # a new process
    built = _counting_spreads(monkeypatch)
    again_lazy, _ = _lazy(spelling, fail=True)
    again = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=again_lazy)
    assert not again_lazy.vectors.loaded and len(built) == 1, "only the model's spreads: the baseline is not read"
    assert again.surface.to_dict() == first.surface.to_dict(), "float64 round trip: the very numbers"
    fresh = surface_null(aw, spelling, keep=keep, n_boot=60, seed=3)  # from scratch, plain AlignedWords, no store
    _same(again.surface, fresh, "the identity-keyed statistics are those of a fresh bootstrap")
    assert again.surface.n_concepts == fresh.n_concepts == int(value[2].sum())
    plain = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=spelling)  # a user's own AlignedWords: vector key
    assert plain.surface.to_dict() == first.surface.to_dict() and len(list(store.folder.glob("*.bin"))) == 2, \
        "a plain AlignedWords keeps its vector-digest key (its own file), with the same numbers"


@pytest.mark.parametrize("change", ["identity", "keep", "seed", "n_boot"])
def test_another_baseline_concepts_seed_or_n_boot_never_reads_an_identity_keyed_file(store, monkeypatch, change):
    """'identity': another data set or baseline version (the task library's identity; tests/test_tasks.py checks what
    changes it)."""
    aw, spelling, keep = _lazy_case()
    verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=_lazy(spelling)[0])
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))
    kw = {"n_boot": 60, "seed": 3, "keep": keep}
    other = spelling
    if change == "identity":  # other vectors under another identity
        rng = np.random.default_rng(5)
        other = AlignedWords(aw.languages, tuple(v + rng.normal(size=v.shape) for v in spelling.vectors), aw.incidence,
                             aw.labels, words=aw.words)
    elif change == "keep":
        kw["keep"] = np.arange(aw.n_rows) >= 8
    elif change == "seed":
        kw["seed"] = 4
    else:
        kw["n_boot"] = 50
    lazy, reads = _lazy(other, b"baseline of data set B" if change == "identity" else b"baseline of data set A")
    got = verdict_bootstrap(aw, surface=lazy, **kw)
    assert reads and store.hits == 0, f"{change}: no stored statistics apply, the baseline is read"
    _same(got.surface, surface_null(aw, other, **kw), f"{change}: the numbers of a fresh bootstrap")
    assert len(list(store.folder.glob("*.bin"))) == 2


def test_a_model_of_the_baselines_dimension_is_compared_by_its_vectors(store):
    """A model whose vectors have the baseline's dimension might be the baseline: the vectors are read and compared."""
    aw, spelling, keep = _lazy_case()
    lazy, reads = _lazy(spelling, dims=12)  # the model's dimension
    assert chance._identity_key(aw, lazy, keep, seed=3, n_boot=40) is None
    verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=lazy)
    verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=_lazy(spelling)[0])  # the identity's own file
    assert reads and len(list(store.folder.glob("*.bin"))) == 2
    own, own_reads = _lazy(aw, dims=12)
    v = verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=own)
    assert own_reads and v.surface.difference.value == 0.0, "the model is the baseline: its own statistics"


@pytest.mark.parametrize("damage", ["rows cut", "rows bit flip", "rows count"])
def test_a_damaged_identity_keyed_file_is_recomputed_and_rewritten(store, monkeypatch, damage):
    aw, spelling, keep = _lazy_case()
    want = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=_lazy(spelling)[0])
    (path,) = store.folder.glob("*.bin")
    raw = path.read_bytes()
    at = raw.rindex(b"ROWS")
    if damage == "rows cut":
        bad = raw[:at + 6]
    elif damage == "rows bit flip":
        bad = raw[:at + 12] + bytes([raw[at + 12] ^ 0x01]) + raw[at + 13:]
    else:  # a well-formed file of this key whose concepts are not this data set's count
        full_key = store._full_key(chance._identity_key(aw, _lazy(spelling)[0], keep, seed=3, n_boot=60))
        point, dist, rows = surface_store._decode(raw, full_key)
        bad = surface_store._encode((point, dist, rows[:-1]), full_key)
    path.write_bytes(bad)
    monkeypatch.setattr(chance, "_SURFACE_DONE", Memo(32))
    lazy, reads = _lazy(spelling)
    got = verdict_bootstrap(aw, n_boot=60, seed=3, keep=keep, surface=lazy)
    assert reads, f"{damage}: not used, the baseline is read and bootstrapped again"
    assert store.damaged == (0 if damage == "rows count" else 1)
    _same(got.surface, want.surface, f"{damage}: the recomputed numbers")
    assert path.read_bytes() == raw, f"{damage}: the file is rewritten with the right statistics"


def test_a_read_only_store_keeps_identity_keyed_statistics_in_memory(store, monkeypatch):
    aw, spelling, keep = _lazy_case()
    _read_only(monkeypatch)
    with pytest.warns(RuntimeWarning, match="kept in memory only"):
        first = verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=_lazy(spelling)[0])
    assert store.errors == 1 and store.damaged == 0
    lazy, _ = _lazy(spelling, fail=True)
    again = verdict_bootstrap(aw, n_boot=40, seed=3, keep=keep, surface=lazy)
    assert not lazy.vectors.loaded, "from memory, without the vectors"
    assert again.surface.to_dict() == first.surface.to_dict()


def test_baseline_vectors_are_read_once_from_any_thread():
    """A panel's callbacks run on kernel subshell threads: concurrent first uses read the vectors once."""
    import threading
    import time

    loads = []

    def load():
        loads.append(threading.get_ident())
        time.sleep(0.02)  # long enough for the other threads to arrive while the first reads
        return (np.eye(3), np.ones((2, 3)))

    v = chance.BaselineVectors(b"id", load, n_languages=2, dims=3)
    got = []
    threads = [threading.Thread(target=lambda: got.append([a.shape for a in v])) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1 and got == [[(3, 3), (2, 3)]] * 8
    bad = chance.BaselineVectors(b"id", lambda: (np.eye(3),), n_languages=2, dims=3)
    with pytest.raises(ValueError, match="1 languages read, 2 expected"):
        bad[0]
