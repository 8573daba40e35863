"""The bootstrap's product of a small space, run as column blocks on several threads while BLAS is pinned to one.

``column_block_product`` computes ``W @ M`` one block of columns at a time (one block per language in the
bootstrap) and runs the blocks side by side on the threads BLAS had before a small space's verdict pinned it to
one.  Each block is the same single-threaded BLAS call whichever thread runs it, so the claim tested here is
bit-for-bit: the numbers do not depend on the thread count (the property the pin was made for).  Against a plain
loop the entries agree to the float64 error bound of a sum of R products, ``R eps sum_k |w_k| |m_k|``.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from semanscope_nb.metrics import spreads
from semanscope_nb.metrics.spreads import AlignedWords, block_product_workers, column_block_product, small_space_blas


@pytest.fixture
def free_cpus(monkeypatch):
    """Set how many CPUs the blocks find free (the real count follows the machine's load at that instant)."""
    def set_free(n: int) -> None:
        monkeypatch.setattr(spreads, "_free_cpus", lambda: n)
    return set_free


def _small_space(R: int = 90, d: int = 16) -> AlignedWords:
    rng = np.random.default_rng(3)
    en = rng.normal(size=(R, d))
    eye = sp.identity(R, format="csr")
    return AlignedWords(("en", "de"), (en, en + rng.normal(size=(R, d))), (eye, eye), tuple(map(str, range(R))))


def _plain_product(W: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """W @ M by loops, and each entry's float64 error bound (R eps sum |w| |m|)."""
    out = np.zeros((W.shape[0], M.shape[1]))
    size = np.zeros_like(out)
    for i in range(W.shape[0]):
        for j in range(M.shape[1]):
            for k in range(W.shape[1]):
                out[i, j] += W[i, k] * M[k, j]
                size[i, j] += abs(W[i, k] * M[k, j])
    return out, W.shape[1] * np.finfo(np.float64).eps * size


def test_blocks_run_on_the_threads_blas_had_and_give_the_bits_of_a_serial_run(free_cpus):
    free_cpus(1)
    rng = np.random.default_rng(0)
    W = rng.integers(0, 4, size=(7, 90)).astype(np.float64)  # resample counts
    M = rng.normal(size=(90, 4 * 16))  # [unit | centred] of two languages, 2d = 32 columns each
    assert block_product_workers() == 1, "outside a pinned block BLAS threads its own calls"
    with threadpool_limits(2, user_api="blas"):  # what the process would use unpinned (a test that needs a count)
        with small_space_blas(_small_space()):
            free_cpus(0)
            assert block_product_workers() == 1
            serial = column_block_product(W, M, 32)  # pinned, no free CPU: the blocks one after the other
            free_cpus(1)
            assert block_product_workers() == 2, "pinned: the blocks run on the two threads BLAS had"
            side_by_side = column_block_product(W, M, 32)
            odd = column_block_product(W, M, 24)  # blocks that do not divide the columns evenly (3 on 2 threads)
    np.testing.assert_array_equal(side_by_side, serial, err_msg="each block is one single-threaded BLAS call on any thread")
    with threadpool_limits(2, user_api="blas"):
        with small_space_blas(_small_space()):
            free_cpus(0)
            odd_serial = column_block_product(W, M, 24)
    np.testing.assert_array_equal(odd, odd_serial, err_msg="uneven blocks: the same bits")
    plain, bound = _plain_product(W, M)
    assert np.all(np.abs(serial - plain) <= bound), "W @ M within R eps sum |w m| of the plain loop"


def test_a_late_helper_thread_leaves_its_blocks_to_the_caller(free_cpus, monkeypatch):
    """The blocks are claimed in turn, not dealt out: while the pool's only thread is held by another job (a side job
    of ``beside``, or its CPU taken), the calling thread computes every block itself -- the product is complete before
    the helper thread is free -- and the bits are those of a serial run."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(4)
    W = rng.integers(0, 4, size=(9, 90)).astype(np.float64)
    M = rng.normal(size=(90, 5 * 16))  # 5 blocks of 16 columns
    held, release = ThreadPoolExecutor(max_workers=1, thread_name_prefix="held"), threading.Event()
    monkeypatch.setattr(spreads, "_block_pool", (held, 99))  # the pool: one thread, busy until released
    busy = held.submit(release.wait, 30)
    out = np.full((9, 80), np.nan)
    free_cpus(1)
    with threadpool_limits(2, user_api="blas"):
        with small_space_blas(_small_space()):
            assert block_product_workers() == 2
            caller = threading.Thread(target=column_block_product, args=(W, M, 16), kwargs={"out": out})
            caller.start()
            deadline = time.monotonic() + 5
            while np.isnan(out).any() and time.monotonic() < deadline:
                time.sleep(0.005)
            complete_while_held = not np.isnan(out).any()
            release.set()
            caller.join(30)
            busy.result(30)
            free_cpus(0)
            serial = column_block_product(W, M, 16)
    held.shutdown()
    assert complete_while_held, "every block was left to a helper thread that could not start"
    assert not caller.is_alive()
    np.testing.assert_array_equal(out, serial, err_msg="who computes a block never changes its bits")


def test_this_process_s_running_side_jobs_are_not_counted_as_busy_cpus(monkeypatch):
    """Two side jobs of the verdict (the gate test, the Euclidean chance level) running on an otherwise idle 2-CPU
    machine make three runnable tasks with the caller: the system's count alone says no CPU is free, which kept the
    bootstrap's product on one thread while they ran.  They are this call's own work: the count leaves them out."""
    from semanscope_nb import machine

    runnable = {"n": 1}
    monkeypatch.setattr(machine, "_runnable_and_cpus", lambda: (runnable["n"], 2))
    assert machine.free_cpus() == 2 and machine.free_cpus(own=5) == 2, "never more than the CPUs"
    runnable["n"] = 3
    assert machine.free_cpus() == 0 and machine.free_cpus(own=2) == 2 and machine.free_cpus(own=1) == 1
    runnable["n"] = 5  # two other programs running besides: still busy
    assert machine.free_cpus(own=2) == 0
    monkeypatch.setattr(machine, "_runnable_and_cpus", lambda: None)
    assert machine.free_cpus(own=2) == 0, "unreadable: the serial routes"

    monkeypatch.setattr(machine, "_runnable_and_cpus", lambda: (runnable["n"], 2))
    release, started = threading.Event(), threading.Semaphore(0)

    def side_job() -> int:
        started.release()
        release.wait(30)
        return 7

    with threadpool_limits(2, user_api="blas"):
        with small_space_blas(_small_space()):
            runnable["n"] = 1  # idle: the jobs go to the pool's threads
            jobs = [spreads.beside(side_job), spreads.beside(side_job)]
            assert all(started.acquire(timeout=30) for _ in jobs)
            runnable["n"] = 3  # the caller and its two running jobs
            assert spreads._side_jobs_running() == 2
            during = block_product_workers()
            release.set()
            assert [j.result(timeout=30) for j in jobs] == [7, 7]
            assert spreads._side_jobs_running() == 0
            after = block_product_workers()  # three runnable tasks that are not its own: busy
    assert during == 2, "its own running side jobs are not held against the product"
    assert after == 1


def test_a_process_on_one_blas_thread_keeps_one(free_cpus):
    free_cpus(4)
    with threadpool_limits(1, user_api="blas"):
        with small_space_blas(_small_space()):
            assert block_product_workers() == 1


def test_no_second_thread_while_every_cpu_is_busy(free_cpus):
    free_cpus(0)
    with threadpool_limits(2, user_api="blas"):
        with small_space_blas(_small_space()):
            assert block_product_workers() == 1, "no free CPU: a second thread would only wait for one"
            assert spreads.beside(sum, [1, 2]).result() == 3, "beside then calls at once"
    free_cpus(3)
    with threadpool_limits(2, user_api="blas"):
        with small_space_blas(_small_space()):
            assert block_product_workers() == 2, "never more than the threads BLAS had"


def test_the_free_cpu_count_is_read_from_the_system():
    n = spreads._free_cpus()
    assert isinstance(n, int) and 0 <= n <= len(__import__("os").sched_getaffinity(0))


def test_blocks_from_several_caller_threads_at_once(free_cpus):
    """JupyterLab runs callbacks on subshell threads: two verdicts may multiply at the same time."""
    free_cpus(1)
    rng = np.random.default_rng(1)
    W = rng.integers(0, 4, size=(5, 90)).astype(np.float64)
    Ms = [rng.normal(size=(90, 64)) for _ in range(4)]
    with threadpool_limits(2, user_api="blas"):
        with small_space_blas(_small_space()):
            free_cpus(0)
            want = [column_block_product(W, M, 32) for M in Ms]  # pinned, one thread: the blocks in turn
            free_cpus(1)
    got: dict[int, np.ndarray] = {}

    def run(i: int) -> None:
        with small_space_blas(_small_space()):
            got[i] = column_block_product(W, Ms[i], 32)

    with threadpool_limits(2, user_api="blas"):
        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert sorted(got) == [0, 1, 2, 3]
    for i in range(4):
        np.testing.assert_array_equal(got[i], want[i], err_msg=f"caller thread {i}: the same bits as a serial run")


def test_semantic_affinity_does_not_depend_on_the_blas_thread_count(free_cpus):
    """The whole verdict (bootstrap, chance level, permutation gate, language-centred SA) with the process on one BLAS
    thread, and on two with a free CPU (blocks and side jobs on a second thread)."""
    free_cpus(1)
    import semanscope_nb as snb
    from semanscope_nb.metrics.affinity import MIN_VERDICT_BOOT  # fewer resamples skip the permutation gate

    rng = np.random.default_rng(5)
    en = rng.normal(size=(60, 24))
    emb = {"en": en, "zh": en + 1.2 * rng.normal(size=(60, 24))}
    runs = []
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="blas"):
            runs.append(snb.semantic_affinity(emb, n_boot=MIN_VERDICT_BOOT, seed=0))
    a, b = runs
    assert a.permutation is not None, "the gate must run for this test to cover it"
    for x, y, what in ((a.cosine.ci, b.cosine.ci, "cosine interval"), (a.euclidean.ci, b.euclidean.ci, "euclidean interval"),
                       ((a.chance.sa_null.value, a.chance.delta.ci[0], a.chance.sa_null_euclidean),
                        (b.chance.sa_null.value, b.chance.delta.ci[0], b.chance.sa_null_euclidean), "chance level"),
                       ((a.permutation.p_value, a.permutation.null_mean), (b.permutation.p_value, b.permutation.null_mean),
                        "permutation gate"),
                       ((a.language_centred_sa, a.chance.sa_null_euclidean), (b.language_centred_sa, b.chance.sa_null_euclidean),
                        "language-centred SA and Euclidean chance level (run beside the bootstrap)")):
        np.testing.assert_array_equal(np.asarray(x, dtype=float), np.asarray(y, dtype=float),
                                      err_msg=f"{what}: one single-threaded BLAS call per block whatever the thread count")


def test_a_gate_test_started_beside_the_bootstrap_but_not_asked_is_dropped(free_cpus, monkeypatch):
    """Unrelated languages: the interval does not say above chance, so the test started on the free CPU is not read."""
    import semanscope_nb as snb
    from semanscope_nb.metrics import affinity
    from semanscope_nb.metrics.affinity import MIN_VERDICT_BOOT

    started = []
    real = affinity._gate_test
    monkeypatch.setattr(affinity, "_gate_test", lambda *a, **k: started.append(1) or real(*a, **k))
    free_cpus(1)
    rng = np.random.default_rng(7)
    emb = {"en": rng.normal(size=(60, 24)), "zh": rng.normal(size=(60, 24))}
    with threadpool_limits(2, user_api="blas"):
        r = snb.semantic_affinity(emb, n_boot=MIN_VERDICT_BOOT, seed=0)
    assert r.chance.delta.ci[0] <= 0, "the case: SA not above its chance level"
    assert started == [1], "the test was started beside the bootstrap (a free CPU)"
    assert r.permutation is None, "not asked: the gate gives no test"


def test_a_product_inside_a_job_of_the_pool_runs_its_blocks_itself(free_cpus):
    """A job started by beside that multiplies again (a Spreads of its own) must not wait for the pool it runs on."""
    rng = np.random.default_rng(2)
    W, M = rng.normal(size=(4, 30)), rng.normal(size=(30, 40))
    free_cpus(1)
    with threadpool_limits(2, user_api="blas"):
        with small_space_blas(_small_space()):
            jobs = [spreads.beside(column_block_product, W, M, 10) for _ in range(8)]  # more jobs than pool threads
            got = [j.result(timeout=30) for j in jobs]
            free_cpus(0)
            want = column_block_product(W, M, 10)
    for g in got:
        np.testing.assert_array_equal(g, want, err_msg="blocks run in the job's own thread: the same bits")


def test_the_gate_of_the_artefact_free_concepts_beside_the_bootstrap_equals_the_serial_one(free_cpus, monkeypatch):
    """Concepts left out as artefacts (identical strings): the gate's test started on a free CPU, on the judged
    concepts, gives the serial run's test and scores."""
    import scipy.sparse as sp

    from semanscope_nb.metrics import affinity
    from semanscope_nb.metrics.affinity import MIN_VERDICT_BOOT, affinity_of_words

    ran_on = []
    real = affinity._gate_test
    monkeypatch.setattr(affinity, "_gate_test", lambda *a, **k: ran_on.append(threading.current_thread().name) or real(*a, **k))

    rng = np.random.default_rng(11)
    R, d = 60, 24
    en = rng.normal(size=(R, d))
    zh = en + 0.8 * rng.normal(size=(R, d))
    words = (tuple(f"w{r}" for r in range(R)), tuple(f"w{r}" if r < 6 else f"z{r}" for r in range(R)))  # 6 identical
    eye = sp.identity(R, format="csr")
    aw = AlignedWords(("en", "zh"), (en, zh), (eye, eye), tuple(map(str, range(R))), words=words)
    runs = []
    for free in (0, 1):
        free_cpus(free)
        with threadpool_limits(2, user_api="blas"):
            runs.append(affinity_of_words(aw, n_boot=MIN_VERDICT_BOOT, seed=0))
    serial, beside = runs
    assert serial.excluded_concepts.get("identical-string") == 6 and serial.permutation is not None, "the case"
    assert len(ran_on) == 2 and ran_on[0] == threading.current_thread().name and ran_on[1] != ran_on[0], \
        "serial: the test in the caller's thread; with a free CPU: on the pool's thread"
    np.testing.assert_array_equal(
        [beside.permutation.p_value, beside.permutation.null_mean, beside.permutation.sa, beside.chance_excluding.sa.value,
         *beside.chance_excluding.delta.ci],
        [serial.permutation.p_value, serial.permutation.null_mean, serial.permutation.sa, serial.chance_excluding.sa.value,
         *serial.chance_excluding.delta.ci],
        err_msg="the same test on the same judged concepts, the same single-threaded calls on either thread")


def _batches(R: int, n: int, seed: int) -> list[np.ndarray]:
    from semanscope_nb.metrics.chance import resample_counts

    return [next(resample_counts(R, 12, seed=seed + i)) for i in range(n)]


def test_the_joint_product_array_is_reused_only_while_no_part_of_it_is_held():
    """Batch after batch the joint product is written into the previous batch's array -- unless a part handed out
    earlier (``intra_parts``) is still alive: that part must keep its numbers."""
    import weakref

    aw = _small_space(R=40, d=8)
    s = spreads.Spreads(aw)
    c1, c2, c3 = _batches(40, 3, seed=20)
    with small_space_blas(aw):
        s.spreads(c1)
        first = weakref.ref(s._prod_buf)  # a weak reference: it does not count as holding the array
        s.spreads(c2)
        assert s._prod_buf is first(), "nothing held: the second batch writes into the first batch's array"
        held = s.intra_parts(c2)  # views into that array, kept by the caller
        kept = [np.array(p[2], copy=True) for p in held]
        s.spreads(c3)
        assert s._prod_buf is not first(), "a part of it is alive: the third batch gets a new array"
        for part, before in zip(held, kept):  # exactly the same numbers: nothing was written over them
            assert np.array_equal(part[2], before), "a held part of an earlier batch was written over"
        fresh = spreads.Spreads(aw)
        for k, v in s.spreads(c3).items():  # again, now that nothing holds the array: reuse gives the same numbers
            np.testing.assert_allclose(v, fresh.spreads(c3)[k], rtol=0, atol=0,
                                       err_msg=f"{k}: the same product written into a reused array")


def test_one_spreads_read_from_two_threads_gives_each_batch_its_own_numbers(free_cpus):
    """Two threads asking one Spreads for different batches at once (JupyterLab subshells): each gets the numbers of a
    serial run on its own counts (a reused product array is taken by one caller at a time)."""
    from concurrent.futures import ThreadPoolExecutor

    free_cpus(1)
    aw = _small_space(R=200, d=256)  # products long enough for the two threads to overlap
    batches = _batches(200, 8, seed=40)
    serial = spreads.Spreads(aw)
    with small_space_blas(aw):
        want = [serial.spreads(c) for c in batches]
        s = spreads.Spreads(aw)
        with ThreadPoolExecutor(max_workers=2) as pool:
            got = list(pool.map(lambda i: s.spreads(batches[i % len(batches)]), range(6 * len(batches))))
    for i, g in enumerate(got):
        for k, v in g.items():
            np.testing.assert_allclose(v, want[i % len(batches)][k], rtol=0, atol=0,
                                       err_msg=f"call {i} {k}: the same arithmetic as a serial run")


def test_the_language_centred_sa_starts_before_the_spreads_and_ends_before_an_error_leaves(free_cpus, monkeypatch):
    """The language-centred SA needs no spreads: it starts on a free CPU before they are built (the same value as the
    serial run's), and when building them fails it has ended before the error leaves the call (and the BLAS pin)."""
    import time

    import semanscope_nb as snb
    from semanscope_nb.metrics import affinity

    rng = np.random.default_rng(9)
    en = rng.normal(size=(40, 16))
    emb = {"en": en, "zh": en + rng.normal(size=(40, 16))}
    runs = []
    for free in (0, 1):
        free_cpus(free)
        with threadpool_limits(2, user_api="blas"):
            runs.append(snb.semantic_affinity(emb, n_boot=0, seed=0).language_centred_sa)
    np.testing.assert_array_equal(runs[0], runs[1], err_msg="the same calls on either thread")

    real, ended, began, order = affinity._language_centred_sa, threading.Event(), threading.Event(), []

    def slow(*a, **k):
        order.append("centred")
        began.set()
        try:
            time.sleep(0.1)
            return real(*a, **k)  # (fails here: the spreads class it reads is the broken one)
        finally:
            ended.set()

    class Broken:
        def __init__(self, *a, **k):
            began.wait(5)  # the job has left the pool's queue (else the error would simply cancel it)
            order.append("spreads")
            raise RuntimeError("spreads failed")

    monkeypatch.setattr(affinity, "_language_centred_sa", slow)
    monkeypatch.setattr(affinity, "Spreads", Broken)
    free_cpus(1)
    with threadpool_limits(2, user_api="blas"):
        with pytest.raises(RuntimeError, match="spreads failed"):
            snb.semantic_affinity(emb, n_boot=0, seed=0)
        assert ended.is_set(), "the job started beside had ended when the error left the call"
    assert order == ["centred", "spreads"], "started before the spreads were built"
