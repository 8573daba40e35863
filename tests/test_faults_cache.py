"""The embedding cache under faults: locks, read-only files and folders, full disks, damage, threads.

Issue 10: a temporary condition never destroys the cache (every committed row survives, nothing is
renamed aside); only confirmed damage moves a file aside, to a name never used before.
Issue 12: a cache opened on one thread works from any other (ipykernel 7 runs widget callbacks on
subshell threads).  Faults are real where the machine allows: small tmpfs mounts (remounted read-only
or filled up) and ``chattr +i`` as root, chmod otherwise; lock holders and writers are real processes.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import pickle
import re
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.models.cache import CacheWarning
from semanscope_nb.models.encoders import RandomEncoder

DB = "embeddings.sqlite"
TEXTS = [f"word-{i}" for i in range(300)]
FRESH = ["fresh-1", "fresh-2", "fresh-3"]
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False
PKG_ROOT = str(Path(snb.__file__).resolve().parent.parent)  # subprocesses import the code under test


# --------------------------------------------------------------------------- helpers


def _encoder() -> RandomEncoder:
    return RandomEncoder(dim=32)


def _populate(folder: Path) -> np.ndarray:
    """A cache with TEXTS in it, closed cleanly (no -wal/-shm left); returns their vectors."""
    with snb.EmbeddingCache(folder) as cache:
        return cache.embed(_encoder(), TEXTS, batch_size=50)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _backups(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob(f"{DB}.damaged-*"))


def _assert_all_rows_survive(folder: Path, vectors: np.ndarray, *, extra: int = 0) -> None:
    """Every original row is in the file with its exact vector, the file is sound, nothing was moved aside."""
    assert _backups(folder) == []
    uri = (folder / DB).resolve().as_uri()
    try:
        con = sqlite3.connect(uri + "?mode=ro", uri=True)
        con.execute("SELECT 1 FROM sqlite_master").fetchall()
    except sqlite3.OperationalError:  # read-only mount or full disk: no WAL index can be built
        con = sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        key = _encoder().cache_key
        rows = dict(con.execute("SELECT text, vec FROM vectors WHERE model_key=?", (key,)))
        assert con.execute("SELECT count(*) FROM vectors").fetchone()[0] == len(TEXTS) + extra
    finally:
        con.close()
    assert all(t in rows for t in TEXTS)
    stored = np.stack([np.frombuffer(rows[t], dtype=np.float32) for t in TEXTS])
    np.testing.assert_array_equal(stored, vectors)


def _cache_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, CacheWarning)]


@pytest.fixture
def tmpfs(tmp_path: Path):
    """mount(size) -> a fresh tmpfs folder (root only; skips where mounting is impossible)."""
    mounted: list[Path] = []

    def mount(size: str = "1m") -> Path:
        if not ROOT:
            pytest.skip("mounting a small tmpfs (real read-only / full filesystem) needs root")
        d = tmp_path / f"tmpfs{len(mounted)}"
        d.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)], check=False, capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounted.append(d)
        return d

    yield mount
    for d in reversed(mounted):
        if subprocess.run(["umount", str(d)], check=False, capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(d)], check=False, capture_output=True)


def _fill(folder: Path, name: str = "filler") -> Path:
    """Write zeros until the filesystem says ENOSPC."""
    path = folder / name
    with open(path, "ab", buffering=0) as fh:
        for chunk in (1 << 16, 1 << 12, 1 << 9):
            while True:
                try:
                    if fh.write(b"\0" * chunk) < chunk:
                        continue
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    return path


@contextmanager
def _lock_held(folder: Path, *, exclusive: bool) -> Iterator[subprocess.Popen]:
    """Another process holds the write lock (``exclusive``: locking_mode=EXCLUSIVE, so nobody can even read)."""
    script = textwrap.dedent(f"""
        import sqlite3, sys
        con = sqlite3.connect({str(folder / DB)!r}, isolation_level=None)
        if {exclusive!r}:
            con.execute("PRAGMA locking_mode=EXCLUSIVE")
        con.execute("BEGIN EXCLUSIVE")
        con.execute("SELECT count(*) FROM vectors").fetchone()
        print("locked", flush=True)
        sys.stdin.readline()
        con.execute("ROLLBACK")
        con.close()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


WORKER = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import semanscope_nb as snb
    from semanscope_nb.models.encoders import RandomEncoder

    folder, timeout, new = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    enc = RandomEncoder(dim=32)
    old = [f"word-{i}" for i in range(300)]
    out = {}

    def attempt(name, fn):
        try:
            out[name] = fn()
            return True
        except Exception as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
            return False

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        box = {}
        if attempt("open", lambda: box.setdefault("c", snb.EmbeddingCache(folder, timeout=timeout)) and "ok"):
            cache = box["c"]
            attempt("old", lambda: bool(np.array_equal(cache.embed(enc, old), enc.encode(old)))
                    and cache.last_stats.n_cached)
            attempt("new", lambda: bool(np.array_equal(cache.embed(enc, [new]), enc.encode([new]))) and "ok")
            attempt("count", cache.count)
            cache.close()
    out["warnings"] = [str(w.message) for w in caught if w.category.__name__ == "CacheWarning"]
    print(json.dumps(out))
""")


def _workers(folder: Path, n: int, *, timeout: float, tag: str) -> list[dict]:
    """Run ``n`` worker processes at once; each opens the cache, reads TEXTS and embeds one new text."""
    env = {**os.environ, "PYTHONPATH": PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(folder), str(timeout), f"{tag}-{i}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for i in range(n)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


# --------------------------------------------------------------------------- locks


@pytest.mark.parametrize("exclusive", [False, True], ids=["writer-holds-lock", "exclusive-locking-mode"])
def test_lock_held_by_another_process_waits_then_raises_cache_error(tmp_path, exclusive):
    """Locked: wait the busy timeout, raise CacheError naming the folder; nothing renamed or changed."""
    vectors = _populate(tmp_path)
    before = _sha(tmp_path / DB)
    enc = _encoder()
    locked = re.escape(f"embedding cache folder '{tmp_path}' is locked by another process")
    with _lock_held(tmp_path, exclusive=exclusive):
        t0 = time.monotonic()
        if exclusive:  # nobody may even read: opening fails, after the timeout
            with pytest.raises(snb.CacheError, match=locked):
                snb.EmbeddingCache(tmp_path, timeout=0.4)
        else:  # WAL readers go on: hits are served, the first miss cannot be stored
            cache = snb.EmbeddingCache(tmp_path, timeout=0.4)
            np.testing.assert_array_equal(cache.embed(enc, TEXTS), vectors)
            assert cache.last_stats.n_encoded == 0
            t0 = time.monotonic()
            with pytest.raises(snb.CacheError, match=locked):
                cache.embed(enc, FRESH)
        waited = time.monotonic() - t0
        assert 0.4 <= waited < 10
        assert _sha(tmp_path / DB) == before
        assert _backups(tmp_path) == []
    if not exclusive:  # the same object works again once the lock is gone
        np.testing.assert_array_equal(cache.embed(enc, FRESH), enc.encode(FRESH))
        assert cache.last_stats.n_encoded == 3 and cache.count() == len(TEXTS) + 3
        cache.close()
    _assert_all_rows_survive(tmp_path, vectors, extra=0 if exclusive else 3)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
@pytest.mark.parametrize("exclusive", [False, True], ids=["writer-holds-lock", "exclusive-locking-mode"])
def test_four_processes_while_another_holds_the_lock(tmp_path, exclusive):
    """4 processes at once against a locked cache: each gets hits or a CacheError naming the folder; no row lost."""
    vectors = _populate(tmp_path)
    before = _sha(tmp_path / DB)
    with _lock_held(tmp_path, exclusive=exclusive):
        results = _workers(tmp_path, 4, timeout=0.5, tag="locked")
        assert _sha(tmp_path / DB) == before
    for r in results:
        if exclusive:
            assert r["open"].startswith("CacheError:") and f"'{tmp_path}' is locked" in r["open"], r
        else:
            assert r["open"] == "ok" and r["old"] == len(TEXTS), r  # every vector identical, all from the cache
            assert r["new"].startswith("CacheError:") and f"'{tmp_path}' is locked" in r["new"], r
            assert r["count"] == len(TEXTS)
    _assert_all_rows_survive(tmp_path, vectors)


# --------------------------------------------------------------------------- read-only


def test_read_only_folder_serves_hits_and_never_writes(tmp_path, tmpfs):
    """Read-only mount (root) or chmod 0555 folder + 0444 file: hits served, misses encoded but not stored."""
    enc = _encoder()
    if ROOT:
        folder = tmpfs("1m")
        vectors = _populate(folder)
        r = subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=False, capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"cannot remount the tmpfs read-only: {r.stderr.strip()}")
    else:
        folder = tmp_path / "ro"
        vectors = _populate(folder)
        (folder / DB).chmod(0o444)
        folder.chmod(0o555)
    try:
        before, listing = _sha(folder / DB), sorted(os.listdir(folder))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cache = snb.EmbeddingCache(folder)
            assert cache.read_only
            np.testing.assert_array_equal(cache.embed(enc, TEXTS), vectors)
            assert cache.last_stats.n_encoded == 0
            np.testing.assert_array_equal(cache.embed(enc, FRESH[:2]), enc.encode(FRESH[:2]))
            np.testing.assert_array_equal(cache.embed(enc, FRESH), enc.encode(FRESH))
            assert cache.last_stats.n_encoded == 3  # not stored, so encoded again
            assert cache.count() == len(TEXTS)
            cache.close()
        msgs = _cache_warnings(caught)
        assert len(msgs) == 1 and "read-only" in msgs[0] and str(folder) in msgs[0], msgs
        assert _sha(folder / DB) == before and sorted(os.listdir(folder)) == listing
        _assert_all_rows_survive(folder, vectors)
    finally:
        if not ROOT:
            folder.chmod(0o755)


def test_read_only_file_in_writable_folder(tmp_path):
    """``chattr +i`` (root) or chmod 0444: the first miss switches to read-only mode, once; file untouched."""
    vectors = _populate(tmp_path)
    db = tmp_path / DB
    if ROOT:
        r = subprocess.run(["chattr", "+i", str(db)], check=False, capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"chattr +i does not work here: {r.stderr.strip()}")
    else:
        db.chmod(0o444)
    try:
        before = _sha(db)
        enc = _encoder()
        cache = snb.EmbeddingCache(tmp_path)
        np.testing.assert_array_equal(cache.embed(enc, TEXTS), vectors)
        with pytest.warns(CacheWarning, match="is read-only"):
            np.testing.assert_array_equal(cache.embed(enc, FRESH[:1]), enc.encode(FRESH[:1]))
        assert cache.read_only
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            np.testing.assert_array_equal(cache.embed(enc, FRESH), enc.encode(FRESH))
        assert _cache_warnings(caught) == []  # warned once only
        assert cache.count() == len(TEXTS)
        cache.close()
        assert _sha(db) == before
        _assert_all_rows_survive(tmp_path, vectors)
    finally:
        if ROOT:
            subprocess.run(["chattr", "-i", str(db)], check=False, capture_output=True)
        else:
            db.chmod(0o644)
    with warnings.catch_warnings(record=True) as caught:  # asked for: read-only without a warning
        warnings.simplefilter("always")
        with snb.EmbeddingCache(tmp_path, read_only=True) as asked:
            np.testing.assert_array_equal(asked.embed(enc, TEXTS + FRESH)[: len(TEXTS)], vectors)
            assert asked.last_stats.n_encoded == 3 and asked.count() == len(TEXTS)
    assert _cache_warnings(caught) == [] and _sha(db) == before


# --------------------------------------------------------------------------- full disk


def test_full_disk_keeps_every_row_and_stores_again_when_there_is_room(tmpfs):
    """A real full tmpfs: writes are dropped with a warning; a new open serves hits read-only; no row lost."""
    folder = tmpfs("1m")
    vectors = _populate(folder)
    enc = _encoder()
    early = snb.EmbeddingCache(folder)  # open before the disk fills: its WAL index exists
    fillers = [_fill(folder)]
    with pytest.warns(CacheWarning, match="not stored until there is room"):
        np.testing.assert_array_equal(early.embed(enc, FRESH), enc.encode(FRESH))
    assert early.count() == len(TEXTS) and not early.read_only
    early.close()
    fillers.append(_fill(folder, "filler2"))  # closing freed the WAL files: fill that too
    with pytest.warns(CacheWarning, match="read-only"):
        late = snb.EmbeddingCache(folder)  # cannot even build a WAL index
    np.testing.assert_array_equal(late.embed(enc, TEXTS), vectors)
    np.testing.assert_array_equal(late.embed(enc, FRESH), enc.encode(FRESH))
    assert late.count() == len(TEXTS)
    late.close()
    _assert_all_rows_survive(folder, vectors)
    for f in fillers:
        f.unlink()
    with snb.EmbeddingCache(folder) as roomy:
        roomy.embed(enc, FRESH)
        assert roomy.last_stats.n_encoded == 3 and not roomy.read_only
    _assert_all_rows_survive(folder, vectors, extra=3)


@pytest.mark.slow  # end to end, several seconds: the full suite runs it, the fast tier leaves it out
def test_four_processes_on_a_full_disk(tmpfs):
    """4 processes at once on a full tmpfs (one cache already open, then none): correct vectors, no row lost."""
    folder = tmpfs("1m")
    vectors = _populate(folder)
    holder = snb.EmbeddingCache(folder)
    fillers = [_fill(folder)]
    for r in _workers(folder, 4, timeout=5, tag="full-open"):
        assert r["open"] == "ok" and r["old"] == len(TEXTS) and r["new"] == "ok" and r["count"] == len(TEXTS), r
        assert any("not stored" in w for w in r["warnings"]), r
    holder.close()
    fillers.append(_fill(folder, "filler2"))
    for r in _workers(folder, 4, timeout=5, tag="full-closed"):
        assert r["open"] == "ok" and r["old"] == len(TEXTS) and r["new"] == "ok" and r["count"] == len(TEXTS), r
        assert any("read-only" in w for w in r["warnings"]), r
    _assert_all_rows_survive(folder, vectors)


@pytest.mark.parametrize("message", ["database or disk is full", "disk I/O error"])
def test_write_error_without_a_code_is_not_damage(tmp_path, monkeypatch, message):
    """Errors raised by hand (no sqlite_errorcode; e.g. from a wrapper) are classified by SQLite's message."""
    vectors = _populate(tmp_path)

    class Failing(sqlite3.Connection):
        def executemany(self, sql, *args):
            if sql.lstrip().upper().startswith("INSERT"):
                raise sqlite3.OperationalError(message)
            return super().executemany(sql, *args)

    monkeypatch.setattr(sqlite3, "connect", functools.partial(sqlite3.connect, factory=Failing))
    enc = _encoder()
    cache = snb.EmbeddingCache(tmp_path)
    with pytest.warns(CacheWarning, match="not stored"):
        np.testing.assert_array_equal(cache.embed(enc, FRESH), enc.encode(FRESH))
    assert cache.count() == len(TEXTS)
    cache.close()
    monkeypatch.undo()
    _assert_all_rows_survive(tmp_path, vectors)


# --------------------------------------------------------------------------- real damage


def test_corrupt_files_moved_aside_to_unique_names_in_the_same_second(tmp_path):
    """Random bytes are damage: each file is moved aside; four in well under a second keep four backups."""
    rng = np.random.default_rng(0)
    written = []
    t0 = time.monotonic()
    for _ in range(4):
        garbage = rng.bytes(8192)
        (tmp_path / DB).write_bytes(garbage)
        written.append(garbage)
        with pytest.warns(CacheWarning, match="is damaged"):
            cache = snb.EmbeddingCache(tmp_path)
        assert cache.count() == 0
        cache.close()
    elapsed = time.monotonic() - t0
    backups = _backups(tmp_path)
    assert len(backups) == 4, (backups, elapsed)
    assert sorted((tmp_path / b).read_bytes() for b in backups) == sorted(written)


def test_damaged_page_found_while_reading_is_confirmed_and_moved_aside(tmp_path):
    """A b-tree page garbled while the cache is open: quick_check confirms it, file moved aside, vectors re-encoded."""
    vectors = _populate(tmp_path)
    db = tmp_path / DB
    good = db.read_bytes()
    page = 4096
    assert len(good) % page == 0 and len(good) // page > 3
    rng = np.random.default_rng(1)
    probe = tmp_path / "probe" / DB
    probe.parent.mkdir()
    for n in range(len(good) // page - 1, 1, -1):  # a page whose damage quick_check sees (not a free page)
        bad = bytearray(good)
        bad[n * page : (n + 1) * page] = rng.bytes(page)
        probe.write_bytes(bytes(bad))
        con = sqlite3.connect(probe)
        try:
            broken = con.execute("PRAGMA quick_check").fetchone()[0] != "ok"
        except sqlite3.DatabaseError:
            broken = True
        finally:
            con.close()
        if broken:
            break
    else:
        pytest.fail("no page found whose damage quick_check reports")
    enc = _encoder()
    cache = snb.EmbeddingCache(tmp_path)
    with open(db, "r+b") as fh:  # bit rot under the open cache
        fh.seek(n * page)
        fh.write(bytes(bad[n * page : (n + 1) * page]))
    other = sqlite3.connect(db)  # another process commits (page 1 only): every connection re-reads from disk
    other.execute("PRAGMA user_version = 7")
    other.close()
    with pytest.warns(CacheWarning, match="is damaged"):
        again = cache.embed(enc, TEXTS)
    np.testing.assert_array_equal(again, vectors)
    assert cache.last_stats.n_encoded == len(TEXTS) and cache.count() == len(TEXTS)
    cache.close()
    backups = [b for b in _backups(tmp_path) if not b.endswith(("-wal", "-shm"))]
    assert len(backups) == 1
    assert (tmp_path / backups[0]).read_bytes()[n * page : (n + 1) * page] == bytes(bad[n * page : (n + 1) * page])


def test_file_moved_away_under_an_open_cache_reconnects(tmp_path):
    """Another process moved the file aside: the next call reconnects, so new rows go to the new file."""
    vectors = _populate(tmp_path)
    enc = _encoder()
    cache = snb.EmbeddingCache(tmp_path)
    np.testing.assert_array_equal(cache.embed(enc, TEXTS), vectors)
    os.replace(tmp_path / DB, tmp_path / "elsewhere.sqlite")
    cache.embed(enc, FRESH)
    assert cache.count() == 3 and not cache.read_only
    cache.close()
    con = sqlite3.connect(tmp_path / "elsewhere.sqlite")
    assert con.execute("SELECT count(*) FROM vectors").fetchone()[0] == len(TEXTS)
    con.close()


def test_bad_timeout_is_rejected_by_name(tmp_path):
    with pytest.raises(ValueError, match="timeout= must be a number of seconds >= 0, got -1"):
        snb.EmbeddingCache(tmp_path, timeout=-1)


# --------------------------------------------------------------------------- threads


def test_cache_opened_on_main_thread_serves_eight_threads_at_once(tmp_path):
    """Issue 12: the panel's cache is opened on the main thread and used on kernel subshell threads."""
    cache = snb.EmbeddingCache(tmp_path)
    enc = snb.load_model("random-null")
    words = [f"w{i}" for i in range(1200)]
    slices = [words[i * 100 : i * 100 + 500] for i in range(8)]  # overlapping: threads race on the same texts
    start = threading.Barrier(8)

    def work(texts: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
        start.wait()
        first = cache.embed(enc, texts, batch_size=16)  # many small transactions, interleaved
        second = cache.embed(enc, texts)
        return first, second, cache.count(enc.cache_key)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, slices))
    reference = snb.load_model("random-null")
    for texts, (first, second, n) in zip(slices, results):
        expected = reference.encode(texts)
        np.testing.assert_array_equal(first, expected)
        np.testing.assert_array_equal(second, expected)
        assert len(texts) <= n <= len(words)
    assert cache.count(enc.cache_key) == len(words)
    assert cache.models() == [(enc.cache_key, len(words))]
    cache.embed(enc, words)
    assert cache.last_stats.n_encoded == 0
    cache.close()


def test_close_and_pickle_work_from_any_thread(tmp_path):
    """A copy unpickled on one thread is used on another; close() works from a thread that did not open it."""
    enc = _encoder()
    cache = snb.EmbeddingCache(tmp_path, timeout=5)
    vectors = cache.embed(enc, TEXTS)
    with ThreadPoolExecutor(1) as pool:
        copy = pool.submit(lambda: pickle.loads(pickle.dumps(cache))).result()
    np.testing.assert_array_equal(copy.embed(enc, TEXTS), vectors)
    assert copy.last_stats.n_encoded == 0 and copy.timeout == 5
    with ThreadPoolExecutor(2) as pool:
        pool.submit(cache.close).result()
        pool.submit(copy.close).result()
        pool.submit(copy.close).result()  # twice is harmless
    with pytest.raises(snb.CacheError, match=re.escape(f"embedding cache '{tmp_path / DB}' is closed")):
        cache.count()
    _assert_all_rows_survive(tmp_path, vectors)
