"""Import, in the background, the libraries a later panel change may need.

A fresh kernel imports scikit-learn (the surface-form baseline's TF-IDF), ``scipy.stats``,
statsmodels and OpenCC on first use: about 2 s on the 2-core machine, paid by the first
change after a restart even when every embedding is cached. A panel calls
:func:`warm_up_imports` once its first map is shown, while the user looks at it.

Python's import system is thread-safe (one lock per module), so a change that needs a
module while it is being imported waits for that import and does not repeat it. A module
that is not installed (an optional extra) is skipped silently: the change that needs it
says so itself.

One hazard is not covered by that lock: a library that *looks up* another in ``sys.modules``
without importing it sees a module that a second thread is still importing, half built.
scikit-learn checks its inputs that way for pyarrow and polars (``sys.modules["polars"]``, then
``polars.DataFrame``), and statsmodels imports polars: importing statsmodels in one thread while
another fits a TF-IDF gave "partially initialized module 'polars' has no attribute
'DataFrame'".  So a panel imports those data-frame libraries (:data:`PROBED_FRAME_LIBRARIES`)
in the thread that builds it, before any of its background threads starts
(:func:`import_probed_frame_libraries`).

>>> t = warm_up_imports(("json",)); t.join(); "json" in __import__("sys").modules
True
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Callable, Sequence

#: What a panel change may import lazily after the first map (the verdict's surface baseline,
#: its statistics, the pair view's FDR, Chinese script folding), in steps of about 0.1-0.3 s each:
#: the warm-up pauses between steps while the panel computes (see :func:`warm_up_imports`).
PANEL_LAZY_MODULES = (
    "scipy.linalg",
    "scipy.special",
    "scipy.optimize",
    "scipy.integrate",
    "scipy.interpolate",
    "scipy.ndimage",
    "scipy.spatial",
    "scipy.stats",  # its own modules import together (any of them runs the package's __init__)
    "joblib",
    "sklearn.base",
    "sklearn.feature_extraction.text",
    "statsmodels.stats.multitest",
    "opencc",
)

#: the longest the warm-up waits for a busy panel before each step (seconds): a long computation that
#: needs these modules gets them anyway, and a panel that never says it is idle cannot stop the warm-up
PATIENCE = 10.0


#: Data-frame libraries that a dependency looks up in ``sys.modules`` without importing them, and
#: that a lazily imported dependency imports (statsmodels imports polars; pandas can import pyarrow)
PROBED_FRAME_LIBRARIES = ("pyarrow", "polars")


def import_probed_frame_libraries(modules: Sequence[str] = PROBED_FRAME_LIBRARIES) -> tuple[str, ...]:
    """Import, now and in this thread, the installed ones of ``modules``; returns those imported.

    >>> import sys
    >>> all(name in sys.modules for name in import_probed_frame_libraries())
    True
    """
    from importlib.util import find_spec

    done = []
    for name in modules:
        if name in sys.modules or find_spec(name) is not None:
            importlib.import_module(name)
            done.append(name)
    return tuple(done)


def _import_all(modules: Sequence[str], busy: Callable[[], bool] | None = None) -> None:
    for name in modules:
        waited = 0.0
        while busy is not None and waited < PATIENCE and _busy(busy):  # leave the GIL to the panel's work
            time.sleep(0.05)
            waited += 0.05
        try:
            importlib.import_module(name)
        except Exception:  # not installed or broken: the computation that needs it reports it
            continue


def _busy(busy: Callable[[], bool]) -> bool:
    try:
        return bool(busy())
    except Exception:  # a broken probe must not stop the warm-up
        return False


def warm_up_imports(modules: Sequence[str] = PANEL_LAZY_MODULES, *, busy: Callable[[], bool] | None = None) -> threading.Thread:
    """Start a daemon thread that imports ``modules`` in order; returns the (started) thread.

    The libraries other threads may look up half built (:data:`PROBED_FRAME_LIBRARIES`) are
    imported first, in the calling thread.  ``busy`` (a callable): before each module the thread
    waits while it returns True (at most :data:`PATIENCE` s): an import holds the GIL for most of
    its time, and a cached model switch made while scipy.stats was being imported took 0.9-2.0 s
    instead of 0.2 s (the first switch within a second of the first map after a restart).

    >>> t = warm_up_imports(("json",), busy=lambda: False); t.join(); t.is_alive()
    False
    """
    import_probed_frame_libraries()
    thread = threading.Thread(target=_import_all, args=(tuple(modules), busy), name="semanscope-warm-up", daemon=True)
    thread.start()
    return thread
