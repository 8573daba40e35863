"""Embedding models behind OpenAI-compatible HTTP APIs (``POST {base_url}/embeddings``).

Request ``{"model": name, "input": [texts]}``; response
``{"data": [{"embedding": [...], "index": i}, ...], "usage": {...}}`` - the
format of OpenAI, Azure OpenAI, Mistral, Together, vLLM, Ollama, LM Studio,
text-embeddings-inference and most proxies.

* The key comes from an environment variable (``api_key_env``), read when a
  request is about to be made; a missing key is an error before any request.
  It is never logged, never part of a result, the cache key or provenance.
* Batching: at most ``max_batch_texts`` texts and ``max_batch_tokens``
  estimated tokens per request (OpenAI's limits are 2048 inputs and 300k
  tokens per request).
* Retries: 429 and 5xx responses, timeouts and dropped connections are
  retried up to ``max_retries`` times with exponential backoff
  (``backoff * 2**attempt``, capped at ``max_backoff``) plus a seeded jitter
  of up to 25 %; a ``Retry-After`` header is respected (capped at
  ``max_retry_after``).  401/403/404 and other 4xx fail at once with a
  clear error (no retry).
* Validation: a response with the wrong number of vectors, a duplicate or
  missing index, a vector of the wrong dimension or a NaN fails the whole
  call with :class:`~semanscope_nb.errors.EmbeddingError`, so nothing of it is
  cached (the cache stores a batch only after ``encode`` returned).

Cache and results key on the **endpoint's model name** (plus ``dimensions``
if it is sent, and an optional ``revision`` tag), not on the base URL: the
same model reached through a proxy, another region or a local tunnel reuses
the vectors already paid for.  If two endpoints serve *different* weights
under one name, give them different ``revision=`` tags.  Provenance records
the endpoint's scheme and host (never its path query or credentials).

HTTP client: ``httpx`` - a well-kept client with separate connect/read
timeouts, connection pooling and precise exception classes (``requests``
would do too; httpx's timeout model is the clearer fit for retry logic).

Token estimate: ``ceil(utf8_bytes / 4)`` per text, at least 1 (about 4
characters per token for English; CJK characters take 3 bytes, i.e. ~0.75
token each, close to what BPE tokenizers give).  ``tiktoken`` is not used: it
downloads its vocabulary files from the internet on first use.

Example
-------
>>> import semanscope_nb as snb
>>> info = snb.register_api_model("openai-3-small", base_url="https://api.openai.com/v1",
...                               model="text-embedding-3-small", dims=1536, replace=True)
>>> info.offline, snb.estimate_tokens(["water", "水"])
(False, 3)
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import random
import time
import urllib.parse
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Iterable, Sequence

import numpy as np

from semanscope_nb.errors import EmbeddingError, ModelLoadError, SemanscopeError
from semanscope_nb.models.encoders import Encoder, package_version
from semanscope_nb.models.registry import (
    ModelInfo,
    get_model_info,
    load_model,
    register_model,
)

log = logging.getLogger("semanscope_nb.api")

RETRY_STATUS = frozenset({429, 500, 502, 503, 504, 520, 521, 522, 524, 529})


class ApiModelError(SemanscopeError, RuntimeError):
    """An API embedding endpoint cannot be used: no key, refused credentials, unknown model or URL, out of retries."""


def estimate_tokens(texts: Iterable[str]) -> int:
    """Approximate tokens for ``texts``: ``ceil(utf8 bytes / 4)`` per text, at least 1 each.

    >>> estimate_tokens(["water"]), estimate_tokens(["水"]), estimate_tokens(["a" * 9])
    (2, 1, 3)
    """
    return sum(max(1, math.ceil(len(t.encode("utf-8")) / 4)) for t in texts)


def _endpoint_label(base_url: str) -> str:
    u = urllib.parse.urlsplit(base_url)
    host = u.hostname or ""
    return f"{u.scheme}://{host}{f':{u.port}' if u.port else ''}"


class OpenAIEmbeddingEncoder(Encoder):
    """An OpenAI-compatible ``/embeddings`` endpoint as an :class:`~semanscope_nb.models.encoders.Encoder`.

    Counters: ``requests_made`` (HTTP requests, retries included),
    ``texts_sent``, ``retries``, ``tokens_reported`` (from ``usage``), and
    ``retry_log`` (status or error, delay) for each retry.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        model_id: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        dims: int | None = None,
        send_dimensions: bool = False,
        revision: str | None = None,
        max_batch_texts: int = 256,
        max_batch_tokens: int = 100_000,
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        max_retry_after: float = 120.0,
        seed: int = 0,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        u = urllib.parse.urlsplit(base_url or "")
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"base_url must be an http(s) URL such as https://api.openai.com/v1, got {base_url!r}")
        if not model or not isinstance(model, str):
            raise ValueError(f"model must be the endpoint's model name, got {model!r}")
        for name, v in (("max_batch_texts", max_batch_texts), ("max_batch_tokens", max_batch_tokens)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if dims is not None and (not isinstance(dims, int) or dims < 1):
            raise ValueError(f"dims must be a positive integer or None, got {dims!r}")
        if send_dimensions and dims is None:
            raise ValueError("send_dimensions=True needs dims=")
        if timeout <= 0 or connect_timeout <= 0:
            raise ValueError(f"timeouts must be > 0, got timeout={timeout}, connect_timeout={connect_timeout}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.model_id = model_id or f"api:{model}"
        self.api_key_env = api_key_env
        self.dims = dims
        self.send_dimensions = send_dimensions
        self.revision = revision
        self.max_batch_texts = max_batch_texts
        self.max_batch_tokens = max_batch_tokens
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.seed = seed
        self.extra_headers = dict(extra_headers or {})
        self._rng = random.Random(seed)
        self._sleep = time.sleep  # tests replace this to record delays instead of waiting
        self._seen_dim: int | None = dims
        self.requests_made = 0
        self.texts_sent = 0
        self.retries = 0
        self.tokens_reported = 0
        self.retry_log: list[tuple[str, float]] = []

    # -- identity: the endpoint's model name, never the key or the URL ------------------
    @property
    def version(self) -> str:
        return f"api:{self.revision or 'unversioned'}"

    @property
    def options(self) -> dict[str, Any]:
        return {"endpoint_model": self.model, "dimensions": self.dims if self.send_dimensions else None,
                "revision": self.revision, "endpoint": _endpoint_label(self.base_url)}

    @property
    def cache_key(self) -> str:
        return json.dumps({"api_model": self.model, "dimensions": self.dims if self.send_dimensions else None,
                           "revision": self.revision}, sort_keys=True)

    def __getstate__(self) -> dict:  # picklable for process pools: no client, no lock
        state = self.__dict__.copy()
        state["_model"] = None
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict) -> None:
        import threading

        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- HTTP -----------------------------------------------------------------------
    def _api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise ApiModelError(
                f"API model '{self.model_id}' needs an API key in the environment variable {self.api_key_env}, "
                f"which is not set (export {self.api_key_env}=...; nothing was sent to {_endpoint_label(self.base_url)})"
            )
        return key

    def _load(self) -> Any:
        try:
            import httpx
        except ImportError as exc:
            raise ModelLoadError(f"API model '{self.model_id}' needs httpx: pip install 'semanscope_nb[dist]'") from exc

        return httpx.Client(timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                            headers={"User-Agent": f"semanscope_nb/{package_version('semanscope_nb')}"})

    def close(self) -> None:
        if self._model is not None:
            self._model.close()
            self._model = None

    def batches(self, texts: Sequence[str]) -> list[list[str]]:
        """``texts`` split to the endpoint's limits (texts and estimated tokens per request)."""
        out: list[list[str]] = []
        cur: list[str] = []
        cur_tokens = 0
        for t in texts:
            n = estimate_tokens([t])
            if cur and (len(cur) >= self.max_batch_texts or cur_tokens + n > self.max_batch_tokens):
                out.append(cur)
                cur, cur_tokens = [], 0
            cur.append(t)
            cur_tokens += n
        if cur:
            out.append(cur)
        return out

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                secs = float(retry_after)
            except ValueError:
                try:
                    secs = parsedate_to_datetime(retry_after).timestamp() - time.time()
                except (TypeError, ValueError):
                    secs = None  # type: ignore[assignment]
            if secs is not None:
                return min(max(0.0, secs), self.max_retry_after)
        base = min(self.max_backoff, self.backoff * 2**attempt)
        return base * (1 + 0.25 * self._rng.random())

    def _post(self, batch: list[str]) -> Any:
        import httpx

        key = self._api_key()
        headers = {"Content-Type": "application/json", **self.extra_headers}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        body: dict[str, Any] = {"model": self.model, "input": batch}
        if self.send_dimensions:
            body["dimensions"] = self.dims
        url = f"{self.base_url}/embeddings"
        where = f"{_endpoint_label(self.base_url)} (model '{self.model}')"
        for attempt in range(self.max_retries + 1):
            self.requests_made += 1
            self.texts_sent += len(batch)
            try:
                r = self._model.post(url, json=body, headers=headers)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                what, retry_after = f"{type(exc).__name__}", None
            else:
                if r.status_code == 200:
                    try:
                        return r.json()
                    except ValueError:
                        raise EmbeddingError(f"{where}: response is not JSON ({r.text[:200]!r})") from None
                if r.status_code in (401, 403):
                    raise ApiModelError(
                        f"{where} refused the credentials (HTTP {r.status_code}): check the key in ${self.api_key_env} "
                        "(its value is not shown) and that it may use this model"
                    )
                if r.status_code == 404:
                    raise ApiModelError(
                        f"{where}: HTTP 404 for POST {url} - unknown model name or wrong base URL "
                        "(OpenAI-compatible servers serve /v1/embeddings: include /v1 in base_url)"
                    )
                if r.status_code not in RETRY_STATUS:
                    raise ApiModelError(f"{where}: HTTP {r.status_code} (not retried): {r.text[:300]}")
                what, retry_after = f"HTTP {r.status_code}", r.headers.get("Retry-After")
            if attempt == self.max_retries:
                raise ApiModelError(f"{where}: still failing after {self.max_retries + 1} attempts (last: {what}"
                                    f"{f', timeout {self.timeout:g} s' if 'Timeout' in what else ''})")
            delay = self._delay(attempt, retry_after)
            self.retries += 1
            self.retry_log.append((what, delay))
            log.warning("%s: %s; retry %d/%d in %.2f s", where, what, attempt + 1, self.max_retries, delay)
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _parse(self, payload: Any, batch: list[str]) -> np.ndarray:
        where = f"{_endpoint_label(self.base_url)} (model '{self.model}')"
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"{where}: response has no 'data' list; not cached")
        if len(data) != len(batch):
            raise EmbeddingError(f"{where}: sent {len(batch)} texts, got {len(data)} vectors back; not cached")
        order = [item.get("index", i) if isinstance(item, dict) else None for i, item in enumerate(data)]
        if sorted(o for o in order if isinstance(o, int)) != list(range(len(batch))):
            raise EmbeddingError(f"{where}: response indices {order[:10]} are not a permutation of 0..{len(batch) - 1}; not cached")
        rows: list[Any] = [None] * len(batch)
        for item, idx in zip(data, order):
            rows[idx] = item.get("embedding")
        lengths = {len(v) if isinstance(v, list) else -1 for v in rows}
        if -1 in lengths:
            raise EmbeddingError(f"{where}: a vector is missing or not a list (base64 encoding is not supported); not cached")
        expected = self._seen_dim
        bad = [batch[i] for i, v in enumerate(rows) if expected is not None and len(v) != expected]
        if bad or len(lengths) > 1:
            raise EmbeddingError(
                f"{where}: vectors of dimension(s) {sorted(lengths)} but {expected or 'one common dimension'} expected "
                f"(e.g. for {bad[:3] or batch[:3]}); not cached"
            )
        out = np.asarray(rows, dtype=np.float32)
        if not np.isfinite(out).all():
            raise EmbeddingError(f"{where}: NaN/inf in the returned vectors; not cached")
        if self._seen_dim is None:
            self._seen_dim = out.shape[1]
        usage = payload.get("usage") or {}
        if isinstance(usage, dict) and isinstance(usage.get("total_tokens", usage.get("prompt_tokens")), int):
            self.tokens_reported += usage.get("total_tokens", usage.get("prompt_tokens"))
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        self._api_key()  # fail before any request
        parts = [self._parse(self._post(b), b) for b in self.batches(texts)]
        return np.concatenate(parts, axis=0)


def register_api_model(
    id: str,
    *,
    base_url: str,
    model: str,
    api_key_env: str | None = "OPENAI_API_KEY",
    dims: int | None = None,
    display_name: str | None = None,
    languages: tuple[str, ...] | str = "~100",
    translation_supervised: bool = False,
    price_per_million_tokens: float | None = None,
    replace: bool = False,
    **options: Any,
) -> ModelInfo:
    """Register an OpenAI-compatible embedding endpoint as model ``id`` (nothing is contacted).

    ``options`` go to :class:`OpenAIEmbeddingEncoder` (``max_batch_texts``,
    ``timeout``, ``max_retries``, ``revision``, ``send_dimensions`` ...).
    """
    OpenAIEmbeddingEncoder(base_url=base_url, model=model, model_id=id, api_key_env=api_key_env, dims=dims, **options)  # validate now
    factory = functools.partial(OpenAIEmbeddingEncoder, base_url=base_url, model=model, model_id=id,
                                api_key_env=api_key_env, dims=dims, **options)
    price = f"; ~{price_per_million_tokens:g} per 1M tokens" if price_per_million_tokens is not None else ""
    info = ModelInfo(
        id, display_name or f"{model} (API)", "API embedding", "unknown (hosted model)", languages, dims, "httpx",
        "see the provider's terms", False, translation_supervised, factory, ("httpx",),
        f"OpenAI-compatible endpoint {_endpoint_label(base_url)}, model '{model}'; key from ${api_key_env}{price}",
    )
    _PRICES[id] = price_per_million_tokens
    return register_model(info, replace=replace)


_PRICES: dict[str, float | None] = {}


@dataclass(frozen=True)
class ApiCostEstimate:
    """What an API model would be sent for ``texts``: uncached texts, requests and estimated tokens."""

    model: str
    n_texts: int
    n_cached: int
    n_uncached: int
    n_requests: int
    estimated_tokens: int
    price_per_million_tokens: float | None = None

    @property
    def estimated_cost(self) -> float | None:
        p = self.price_per_million_tokens
        return None if p is None else self.estimated_tokens * p / 1e6

    def describe(self) -> str:
        cost = f", ~{self.estimated_cost:.4f} at {self.price_per_million_tokens:g}/1M tokens" if self.estimated_cost is not None else ""
        return (f"{self.model}: {self.n_uncached} of {self.n_texts} texts not cached -> {self.n_requests} request(s), "
                f"~{self.estimated_tokens} tokens (estimate: utf-8 bytes / 4){cost}")


def estimate_api_cost(model: str | OpenAIEmbeddingEncoder, texts: Sequence[str], *, cache: Any = None,
                      language: str | None = None) -> ApiCostEstimate:
    """Uncached texts, requests and estimated tokens an API model needs for ``texts`` (nothing is sent).

    ``cache``: an :class:`~semanscope_nb.models.cache.EmbeddingCache` (None: the default one, False: none).
    """
    from semanscope_nb.models.cache import EmbeddingCache

    enc = load_model(model)
    if not isinstance(enc, OpenAIEmbeddingEncoder):
        raise ValueError(f"{enc.model_id} is not an API model")
    unique = list(dict.fromkeys(texts))
    if cache is False:
        cached: set[str] = set()
    else:
        store = cache if cache is not None else EmbeddingCache()
        cached = set(store.get(enc.cache_key_for(language), unique)[0])
    missing = [t for t in unique if t not in cached]
    price = _PRICES.get(enc.model_id)
    return ApiCostEstimate(enc.model_id, len(unique), len(cached), len(missing), len(enc.batches(missing)),
                           estimate_tokens(missing), price)


def is_api_model(model_id: str) -> bool:
    """True if ``model_id`` is registered as an API model (checked without constructing it)."""
    try:
        info = get_model_info(model_id)
    except Exception:
        return False
    f = info.factory
    return isinstance(f, functools.partial) and f.func is OpenAIEmbeddingEncoder
