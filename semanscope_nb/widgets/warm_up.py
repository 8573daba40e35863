"""Import, in the background, the libraries a later panel change may need.

A fresh kernel imports scikit-learn (the surface-form baseline's TF-IDF), ``scipy.stats``,
statsmodels and OpenCC on first use: about 2 s on the 2-core machine, paid by the first
change after a restart even when every embedding is cached. A panel calls
:func:`warm_up_imports` once its first map is shown, while the user looks at it.

Python's import system is thread-safe (one lock per module), so a change that needs a
module while it is being imported waits for that import and does not repeat it. A module
that is not installed (an optional extra) is skipped silently: the change that needs it
says so itself.

>>> t = warm_up_imports(("json",)); t.join(); "json" in __import__("sys").modules
True
"""

from __future__ import annotations

import importlib
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


def _import_all(modules: Sequence[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # not installed or broken: the computation that needs it reports it
            continue


def warm_up_imports(modules: Sequence[str] = PANEL_LAZY_MODULES) -> threading.Thread:
    """Start a daemon thread that imports ``modules`` in order; returns the (started) thread."""
    thread = threading.Thread(target=_import_all, args=(tuple(modules),), name="semanscope-warm-up", daemon=True)
    thread.start()
    return thread
