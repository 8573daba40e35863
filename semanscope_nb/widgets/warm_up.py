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
from collections.abc import Sequence

#: What a panel change may import lazily after the first map (the verdict's surface baseline,
#: its statistics, the pair view's FDR, Chinese script folding).
PANEL_LAZY_MODULES = (
    "scipy.stats",
    "sklearn.feature_extraction.text",
    "statsmodels.stats.multitest",
    "opencc",
)


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


def _import_all(modules: Sequence[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # not installed or broken: the computation that needs it reports it
            continue


def warm_up_imports(modules: Sequence[str] = PANEL_LAZY_MODULES) -> threading.Thread:
    """Start a daemon thread that imports ``modules`` in order; returns the (started) thread.

    The libraries other threads may look up half built (:data:`PROBED_FRAME_LIBRARIES`) are
    imported first, in the calling thread.
    """
    import_probed_frame_libraries()
    thread = threading.Thread(target=_import_all, args=(tuple(modules),), name="semanscope-warm-up", daemon=True)
    thread.start()
    return thread
