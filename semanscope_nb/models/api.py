"""Embedding models behind OpenAI-compatible HTTP APIs (``POST {base_url}/embeddings``).

Request ``{"model": name, "input": [texts]}``; response
``{"data": [{"embedding": [...], "index": i}, ...], "usage": {...}}`` - the
format of OpenAI, Azure OpenAI, Mistral, Together, vLLM, Ollama, LM Studio,
text-embeddings-inference and most proxies.

* The key comes from an environment variable (``api_key_env``), read when a
  request is about to be made; a missing key is an error before any request.
  It is never logged, never part of a result, the cache key or provenance.
* Secrets never leave the process: the key, any userinfo of ``base_url``
  (``https://user:key@host/v1``, sent as HTTP Basic auth) and any
  credential-like query value (``key``, ``api_key``, ``token``, ``sig``,
  ``password`` ... see :func:`redact_secrets`) are replaced by ``***`` in every
  message, error body and log record.  A :class:`logging.Filter` on the
  ``httpx``/``httpcore`` loggers (which log request URLs at INFO/DEBUG) does
  the same for their records.
* URLs are built with :mod:`urllib.parse`: ``/embeddings`` is appended to the
  *path* of ``base_url`` and its query is kept, so an Azure deployment URL
  such as ``https://host/openai/deployments/x?api-version=2024-02-01`` works.
* Batching: at most ``max_batch_texts`` texts and ``max_batch_tokens``
  estimated tokens per request (OpenAI's limits are 2048 inputs and 300k
  tokens per request).  A server model whose vectors depend on their batch
  (padding, BLAS blocking) returns vectors that differ in the last float32
  bits from a one-batch local run of the same weights; tests compare them
  within the local model's ``vector_tolerance`` (2e-6 for the USE port), and
  decisions on distances absorb it through the near-tie rule of
  :mod:`semanscope_nb.metrics.ties`.
* Retries: 429 and 5xx responses, timeouts and dropped connections are
  retried up to ``max_retries`` times with exponential backoff
  (``backoff * 2**attempt``, capped at ``max_backoff``) plus a seeded jitter
  of up to 25 %.  A ``Retry-After`` header is respected: delay-seconds
  (digits) or an HTTP-date in the future, capped at ``max_retry_after``
  (default :data:`MAX_RETRY_AFTER` = 60 s, so a server cannot park a run for
  hours).  Anything else (garbage, ``nan``, a negative number, a date in the
  past) falls back to the exponential backoff delay - never to 0 s.
  401/403/404 and other 4xx fail at once with a clear error (no retry).
* Validation: a response with the wrong number of vectors, a duplicate or
  missing index, a vector of the wrong dimension, a NaN, or an all-zero or
  constant vector (no real text embeds to that) fails the whole call with
  :class:`~semanscope_nb.errors.EmbeddingError` naming the model and the text
  index, so nothing of it is cached (the cache stores a batch only after
  ``encode`` returned).

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

import base64
import functools
import json
import logging
import math
import os
import random
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any, Iterable, Sequence

import numpy as np

from semanscope_nb.errors import ApiModelError, EmbeddingError, ModelLoadError
from semanscope_nb.models.encoders import Encoder, package_version
from semanscope_nb.models.registry import (
    ModelInfo,
    get_model_info,
    load_model,
    register_model,
    set_endpoint_encoder,
)

log = logging.getLogger("semanscope_nb.api")

RETRY_STATUS = frozenset({429, 500, 502, 503, 504, 520, 521, 522, 524, 529})

#: Longest wait a server's ``Retry-After`` can impose, in seconds (the default ``max_retry_after``).
MAX_RETRY_AFTER = 60.0

#: Query-parameter and header names whose values are credentials (compared lower-case);
#: names ending in key/token/secret/password/signature count too.
CREDENTIAL_NAMES = frozenset({
    "key", "api_key", "api-key", "apikey", "token", "access_token", "sig", "signature", "secret", "password",
    "auth", "authorization", "proxy-authorization", "code", "passwd", "pwd", "client_secret", "x-api-key",
    "ocp-apim-subscription-key", "subscription-key", "cookie", "set-cookie",
})
_CREDENTIAL_SUFFIXES = ("key", "token", "secret", "password", "signature")
MASK = "***"

# every secret this process has handed to an endpoint, longest first: exact-match redaction (process memory
# only); replaced as a whole tuple under the lock, so redacting threads never see a set change size
_SECRETS: tuple[str, ...] = ()
_SECRETS_LOCK = threading.Lock()
_SCHEME_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s\"'<>]*@")
_AUTH_HEADER = re.compile(r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)([^\"'\r\n,}\]\\]+)")
_AUTH_SCHEME = re.compile(r"(?i)\b(bearer|basic|digest)(\s+)[^\s\"',;}\]\\]+")
_NAME_VALUE = re.compile(r"(?i)([\w.-]+)([\"']?\s*[:=](?!//)\s*)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'&,;#?<>}\]\\]+)")


def _is_credential_name(name: str) -> bool:
    n = name.strip().strip("\"'").lower()
    return n in CREDENTIAL_NAMES or n.endswith(_CREDENTIAL_SUFFIXES)


#: secrets shorter than this are not matched exactly (replacing every "ab" would wreck all messages);
#: the patterns of :func:`redact_secrets` still mask them where they appear as credentials
MIN_SECRET_LENGTH = 4


def _encoded_forms(value: str) -> set[str]:
    """The forms in which a server may echo ``value``: URL-encoded, hex (either case) and base64.

    base64 is matched at each of the three byte alignments a secret can have inside a longer encoded
    string (``base64("Bearer " + key)``): for each, the run of characters that depends on the secret's
    bytes alone, in the standard and the URL-safe alphabet, plus the whole encoding with and without
    padding.  Runs shorter than :data:`MIN_SECRET_LENGTH` are left to the patterns.

    >>> echoed = base64.b64encode(b"Bearer sk-secret-1234").decode()  # the key at byte offset 7
    >>> any(form in echoed for form in _encoded_forms("sk-secret-1234"))
    True
    """
    raw = value.encode("utf-8")
    forms = {urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value), raw.hex(), raw.hex().upper()}
    for alphabet in (base64.b64encode, base64.urlsafe_b64encode):
        whole = alphabet(raw).decode("ascii")
        forms |= {whole, whole.rstrip("=")}
        for offset in (0, 1, 2):
            enc = alphabet(b"\0" * offset + raw).decode("ascii")
            # whole 3-byte groups only; with a preceding byte the first group mixes it with the secret's
            forms.add(enc[4 if offset else 0 : 4 * ((offset + len(raw)) // 3)])
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def _remember_secret(value: str | None) -> None:
    """Add ``value`` and its encoded forms (:func:`_encoded_forms`) to the exact-match redaction set."""
    global _SECRETS
    if value and len(value) >= MIN_SECRET_LENGTH:
        forms = {value} | _encoded_forms(value)
        with _SECRETS_LOCK:
            if not forms <= set(_SECRETS):
                _SECRETS = tuple(sorted(set(_SECRETS) | forms, key=len, reverse=True))


def redact_secrets(text: Any) -> str:
    """``str(text)`` with every credential replaced by ``***``.

    Replaced: each key or URL credential this process has used (exactly, and
    URL-encoded), ``Authorization`` header values, ``Bearer``/``Basic``/``Digest``
    credentials, URL userinfo (``scheme://user:pw@`` -> ``scheme://***@``) and the value of any
    credential-like name (:data:`CREDENTIAL_NAMES`) in ``name=value`` or
    ``"name": "value"`` form (query strings, echoed headers, JSON).

    >>> redact_secrets("GET https://u:pw@h/v1?api-version=1&api_key=abc Authorization: Bearer sk-1")
    'GET https://***@h/v1?api-version=1&api_key=*** Authorization: ***'
    """
    out = str(text)
    for secret in _SECRETS:
        out = out.replace(secret, MASK)
    out = _SCHEME_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", out)
    out = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{MASK}", out)
    out = _AUTH_SCHEME.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", out)

    def name_value(m: re.Match) -> str:
        name, sep, value = m.groups()
        quote = value[0] if value[0] in "\"'" else ""
        if not _is_credential_name(name):  # a quoted value may hold name=value pairs itself (an echoed URL)
            return f"{name}{sep}{quote}{_NAME_VALUE.sub(name_value, value[1:-1])}{quote}" if quote else m.group(0)
        if value.strip(quote).startswith(MASK):
            return m.group(0)
        return f"{name}{sep}{quote}{MASK}{quote}"

    return _NAME_VALUE.sub(name_value, out)


class _RedactingFilter(logging.Filter):
    """Rewrites a log record's message with :func:`redact_secrets` (installed on the httpx/httpcore loggers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record: leave it to logging's own error handling
            return True
        clean = redact_secrets(msg)
        if clean != msg or record.args:
            record.msg, record.args = clean, ()
        return True


#: loggers that carry request URLs or headers; a logger's filters do not apply to its children's
#: records, so every httpcore child logger is listed
REDACTED_LOGGERS = ("httpx", "httpcore", "httpcore.connection", "httpcore.http11", "httpcore.http2",
                    "httpcore.proxy", "httpcore.socks", "semanscope_nb.api")


def install_log_redaction() -> None:
    """Put a redacting :class:`logging.Filter` on :data:`REDACTED_LOGGERS` (idempotent; done at import)."""
    for name in REDACTED_LOGGERS:
        lg = logging.getLogger(name)
        if not any(isinstance(f, _RedactingFilter) for f in lg.filters):
            lg.addFilter(_RedactingFilter())


install_log_redaction()


def _safe_url(url: str) -> str:
    """``url`` without userinfo and with credential query values masked (for messages)."""
    u = urllib.parse.urlsplit(url)
    netloc = u.netloc.rpartition("@")[2]
    query = "&".join(
        f"{name}={MASK}" if eq and _is_credential_name(urllib.parse.unquote_plus(name)) else part
        for part in u.query.split("&") if part for name, eq, _ in [part.partition("=")]
    )
    return redact_secrets(urllib.parse.urlunsplit((u.scheme, f"{MASK}@{netloc}" if "@" in u.netloc else netloc,
                                                   u.path, query, "")))


def _embeddings_url(base_url: str) -> tuple[str, tuple[str, str] | None]:
    """``base_url`` with ``/embeddings`` appended to its path (query kept), and its userinfo as (user, password)."""
    u = urllib.parse.urlsplit(base_url)
    auth = None
    if "@" in u.netloc:
        auth = (urllib.parse.unquote(u.username or ""), urllib.parse.unquote(u.password or ""))
    netloc = u.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((u.scheme, netloc, u.path.rstrip("/") + "/embeddings", u.query, "")), auth


def estimate_tokens(texts: Iterable[str]) -> int:
    """Approximate tokens for ``texts``: ``ceil(utf8 bytes / 4)`` per text, at least 1 each.

    >>> estimate_tokens(["water"]), estimate_tokens(["水"]), estimate_tokens(["a" * 9])
    (2, 1, 3)
    """
    return sum(max(1, math.ceil(len(t.encode("utf-8")) / 4)) for t in texts)


def _endpoint_label(base_url: str) -> str:
    """Scheme, host and port of ``base_url``: no path, query or credentials."""
    u = urllib.parse.urlsplit(base_url)
    host = u.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = u.port
    except ValueError:
        port = None
    return f"{u.scheme}://{host}{f':{port}' if port else ''}"


def _checked_base_url(base_url: Any) -> urllib.parse.SplitResult:
    """``base_url`` split, if it is an http(s) URL with a host; the error shows it with any credential masked."""
    u = urllib.parse.urlsplit(base_url if isinstance(base_url, str) else "")
    try:
        ok = u.scheme in ("http", "https") and bool(u.hostname) and (u.port is None or u.port > 0)
    except ValueError:  # a port that is not a number
        ok = False
    if not ok:
        shown = redact_secrets(re.sub(r"^([a-z][a-z0-9+.-]*://)?[^/?#@\s]*@", rf"\g<1>{MASK}@", str(base_url or "")))
        raise ValueError(f"base_url must be an http(s) URL such as https://api.openai.com/v1, got {shown!r}")
    return u


def _check_endpoint_options(*, model: Any, max_batch_texts: Any, max_batch_tokens: Any, dims: Any, send_dimensions: bool,
                            timeout: float, connect_timeout: float, max_retries: int, max_retry_after: float) -> None:
    """Raise a ValueError naming the first option of an API encoder that is out of range."""
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
    if not max_retry_after >= 0:
        raise ValueError(f"max_retry_after must be >= 0 seconds, got {max_retry_after}")


class OpenAIEmbeddingEncoder(Encoder):
    """An OpenAI-compatible ``/embeddings`` endpoint as an :class:`~semanscope_nb.models.encoders.Encoder`.

    Counters: ``requests_made`` (HTTP requests, retries included),
    ``texts_sent``, ``retries``, ``tokens_reported`` (from ``usage``), and
    ``retry_log`` (status or error, delay) for each retry.  ``_sleep`` is the
    function that waits between retries (``time.sleep``; tests replace it).
    ``vector_tolerance`` is None: how the server's vectors move with their
    batch is the server's model's business (see the module docstring).
    """

    vector_tolerance = None

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
        max_retry_after: float = MAX_RETRY_AFTER,
        seed: int = 0,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        u = _checked_base_url(base_url)
        _check_endpoint_options(model=model, max_batch_texts=max_batch_texts, max_batch_tokens=max_batch_tokens, dims=dims,
                                send_dimensions=send_dimensions, timeout=timeout, connect_timeout=connect_timeout,
                                max_retries=max_retries, max_retry_after=max_retry_after)
        self.base_url = urllib.parse.urlunsplit(u._replace(path=u.path.rstrip("/"), fragment=""))
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
        self._remember_url_secrets()

    def _remember_url_secrets(self) -> None:
        """Register the URL's userinfo, credential query values and credential headers for redaction."""
        u = urllib.parse.urlsplit(self.base_url)
        if "@" in u.netloc:
            userinfo = u.netloc.rpartition("@")[0]
            user, _, pw = userinfo.partition(":")
            # the password is the credential; a bare user part (https://KEY@host) is one too
            for v in (userinfo, *((pw, urllib.parse.unquote(pw)) if pw else (user, urllib.parse.unquote(user)))):
                _remember_secret(v)
            _remember_secret(base64.b64encode(f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(pw)}".encode()).decode())
        for name, value in urllib.parse.parse_qsl(u.query, keep_blank_values=True):
            if _is_credential_name(name):
                _remember_secret(value)
        for name, value in self.extra_headers.items():
            if _is_credential_name(name):
                _remember_secret(str(value))
                _remember_secret(str(value).partition(" ")[2] if " " in str(value) else None)

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
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._remember_url_secrets()  # a worker process redacts them too

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
        _remember_secret(key)
        if not all(33 <= ord(c) <= 126 for c in key):
            raise ApiModelError(
                f"API model '{self.model_id}': the key in ${self.api_key_env} holds spaces, control or non-ASCII "
                "characters, which an HTTP header cannot carry (its value is not shown); nothing was sent"
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

    def _retry_after_seconds(self, retry_after: str | None) -> float | None:
        """Seconds a ``Retry-After`` value asks for, or None if it is absent or unusable.

        Delay-seconds (digits, optionally with a fraction) and HTTP-dates in the
        future count; a date without a zone is read as UTC.  Garbage, ``nan``,
        ``inf``, negative numbers and dates not in the future are unusable.
        """
        value = (retry_after or "").strip()
        if not value:
            return None
        if re.fullmatch(r"\d+(\.\d+)?", value):
            return float(value)
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        secs = when.timestamp() - time.time()
        return secs if secs > 0 else None

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        """The wait before retry ``attempt + 1``: ``Retry-After`` capped at ``max_retry_after``, else the backoff."""
        secs = self._retry_after_seconds(retry_after)
        if secs is not None:
            return min(secs, self.max_retry_after)
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
        url, auth = _embeddings_url(self.base_url)  # userinfo goes as Basic auth, never in the request URL
        shown_url = _safe_url(url)
        where = f"{_endpoint_label(self.base_url)} (model '{self.model}')"
        for attempt in range(self.max_retries + 1):
            self.requests_made += 1
            self.texts_sent += len(batch)
            failure: str | None = None
            try:
                r = self._model.post(url, json=body, headers=headers, **({"auth": auth} if auth else {}))
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                what, retry_after = f"{type(exc).__name__}", None
            except Exception as exc:  # noqa: BLE001 - e.g. httpx.InvalidURL, whose message may quote the URL
                failure = f"{where}: request to {shown_url} failed: {type(exc).__name__}: {redact_secrets(exc)}"
            else:
                if r.status_code == 200:
                    try:
                        return r.json()
                    except ValueError:
                        raise EmbeddingError(f"{where}: response is not JSON ({redact_secrets(r.text)[:200]!r})") from None
                if r.status_code in (401, 403):
                    which = ("the user:password in base_url (sent as HTTP Basic auth)" if auth
                             else f"the key in ${self.api_key_env}")
                    raise ApiModelError(
                        f"{where} refused the credentials (HTTP {r.status_code}): check {which} "
                        "(its value is not shown) and that it may use this model"
                    )
                if r.status_code == 404:
                    raise ApiModelError(
                        f"{where}: HTTP 404 for POST {shown_url} - unknown model name or wrong base URL "
                        "(OpenAI-compatible servers serve /v1/embeddings: include /v1 in base_url)"
                    )
                if r.status_code not in RETRY_STATUS:
                    # redact the whole body before cutting it, so no fragment of a secret survives
                    raise ApiModelError(f"{where}: HTTP {r.status_code} (not retried): {redact_secrets(r.text)[:300]}")
                what, retry_after = f"HTTP {r.status_code}", r.headers.get("Retry-After")
            if failure is not None:
                raise ApiModelError(failure)  # outside the except block: no chained httpx exception
            if attempt == self.max_retries:
                raise ApiModelError(f"{where}: still failing after {self.max_retries + 1} attempts (last: {what}"
                                    f"{f', timeout {self.timeout:g} s' if 'Timeout' in what else ''})")
            delay = self._delay(attempt, retry_after)
            self.retries += 1
            self.retry_log.append((what, delay))
            log.warning("%s: %s; retry %d/%d in %.2f s", where, what, attempt + 1, self.max_retries, delay)
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _parse(self, payload: Any, batch: list[str], *, offset: int = 0, total: int | None = None) -> np.ndarray:
        """The vectors of one response, in ``batch`` order; ``offset`` is the batch's position in the encode call."""
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
        try:
            out = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise EmbeddingError(f"{where}: a vector holds non-numbers; not cached") from None
        if not np.isfinite(out).all():
            raise EmbeddingError(f"{where}: NaN/inf in the returned vectors; not cached")
        degenerate = ~np.any(out != 0, axis=1)  # all zeros
        if out.shape[1] > 1:
            degenerate |= np.all(out == out[:, :1], axis=1)  # every component equal
        if degenerate.any():
            i = int(np.flatnonzero(degenerate)[0])
            kind = "all zeros" if not np.any(out[i]) else f"constant ({float(out[i, 0]):g} in every dimension)"
            raise EmbeddingError(
                f"API model '{self.model_id}' at {where} returned a degenerate vector ({kind}) for text index "
                f"{offset + i} of {total if total is not None else len(batch)} ({batch[i]!r}); "
                f"{int(degenerate.sum())} such vector(s) in the batch; nothing of this call is cached"
            )
        if self._seen_dim is None:
            self._seen_dim = out.shape[1]
        usage = payload.get("usage") or {}
        if isinstance(usage, dict) and isinstance(usage.get("total_tokens", usage.get("prompt_tokens")), int):
            self.tokens_reported += usage.get("total_tokens", usage.get("prompt_tokens"))
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        self._api_key()  # fail before any request
        parts, offset = [], 0
        for b in self.batches(texts):
            parts.append(self._parse(self._post(b), b, offset=offset, total=len(texts)))
            offset += len(b)
        return np.concatenate(parts, axis=0)


class _ApiModelFactory(functools.partial):
    """``functools.partial(OpenAIEmbeddingEncoder, ...)`` whose repr shows no URL credentials or header values."""

    def __repr__(self) -> str:
        kw = dict(self.keywords)
        if "base_url" in kw:
            kw["base_url"] = _safe_url(kw["base_url"])
        if kw.get("extra_headers"):
            kw["extra_headers"] = {k: MASK for k in kw["extra_headers"]}
        return redact_secrets(f"{type(self).__name__}({self.func.__name__}, " + ", ".join(f"{k}={v!r}" for k, v in kw.items()) + ")")


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
    factory = _ApiModelFactory(OpenAIEmbeddingEncoder, base_url=base_url, model=model, model_id=id,
                               api_key_env=api_key_env, dims=dims, **options)
    price = f"; ~{price_per_million_tokens:g} per 1M tokens" if price_per_million_tokens is not None else ""
    info = ModelInfo(
        id, display_name or f"{model} (API)", "API embedding", "unknown (hosted model)", languages, dims, "httpx",
        "see the provider's terms", False, translation_supervised, factory, ("httpx",),
        f"OpenAI-compatible endpoint {_endpoint_label(base_url)}, model '{model}'; key from ${api_key_env}{price}",
        frameworks=("API",),
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
    from semanscope_nb.models.cache import resolve_cache

    enc = load_model(model)
    if not isinstance(enc, OpenAIEmbeddingEncoder):
        raise ValueError(f"{enc.model_id} is not an API model")
    unique = list(dict.fromkeys(texts))
    store = resolve_cache(cache)
    cached: set[str] = set() if store is None else set(store.get(enc.cache_key_for(language), unique)[0])
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


set_endpoint_encoder(OpenAIEmbeddingEncoder)  # the registry's key presets (paper 000's API models) build with it
