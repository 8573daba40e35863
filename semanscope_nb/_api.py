"""The public names of a namespace, for the ``__all__`` of each layer's ``__init__``.

>>> import types
>>> public_names({"f": len, "_g": len, "sub": types, "charts": types}, modules=("charts",))
['charts', 'f']
"""

from __future__ import annotations

import types
from typing import Any, Iterable, Mapping


def public_names(namespace: Mapping[str, Any], *, modules: Iterable[str] = ()) -> list[str]:
    """Sorted names in ``namespace`` that do not start with ``_``; sub-modules only when listed in ``modules``."""
    keep = set(modules)
    return sorted(n for n, v in namespace.items()
                  if not n.startswith("_") and (not isinstance(v, types.ModuleType) or n in keep) and n != "annotations")
