"""Issue 10: the API key never leaves the process; URLs, degenerate vectors and Retry-After.

Every test talks to a real HTTP server on 127.0.0.1 (stdlib ``http.server`` in a thread) that
records what it received and answers from a per-request script: embeddings (``random-null``),
an error whose body echoes the request's headers and URL (the worst case for a leak), a 429
with a given ``Retry-After``, or a zero / constant vector.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import threading
import traceback
import urllib.parse
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.models.api import ApiModelError, OpenAIEmbeddingEncoder

KEY = "sk-faults-KEY-5d1e0b9a"  # the Bearer key, from the environment
URL_SECRET = "urlsecret-93c7f2e4"  # a credential inside base_url (query value or userinfo password)
KEY_ENV = "SNB_FAULTS_API_KEY"
WORDS = ["water", "fire", "水", "火", "Wasser", "Feuer", "eau", "feu", "agua", "fuego", "みず", "ひ"]


#: how a server may echo the key it got (issue 20: base64 and hex joined raw, URL, Basic and repr)
ECHOED_FORMS = {
    "raw": lambda k: k,
    "repr": repr,
    "url": lambda k: urllib.parse.quote(k, safe=""),
    "basic": lambda k: "Basic " + base64.b64encode(f"user:{k}".encode()).decode(),
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "base64-urlsafe-unpadded": lambda k: base64.urlsafe_b64encode(k.encode()).decode().rstrip("="),
    "base64-of-bearer-header": lambda k: base64.b64encode(f"Bearer {k}".encode()).decode(),
    "base64-with-suffix": lambda k: base64.b64encode(f"x{k}:0".encode()).decode(),
    "hex": lambda k: k.encode().hex(),
    "HEX": lambda k: k.encode().hex().upper(),
}


def _recoverable(text: str, secret: str) -> list[str]:
    """Decodings of ``text`` that still show ``secret[:12]``: every base64 or hex run, at every alignment."""
    import binascii
    import re

    found = []
    for run in re.findall(r"[A-Za-z0-9+/_=-]{8,}", text):
        for start in range(4):
            chunk = run[start:].rstrip("=")
            chunk = chunk[: len(chunk) - len(chunk) % 4]
            for decode in (base64.b64decode, base64.urlsafe_b64decode):
                try:
                    plain = decode(chunk)
                except (binascii.Error, ValueError):
                    continue
                if secret[:12].encode() in plain:
                    found.append(run)
        for start in range(2):
            try:
                chunk = run[start:]
                if secret[:12].encode() in bytes.fromhex(chunk[: len(chunk) - len(chunk) % 2]):
                    found.append(run)
            except ValueError:
                pass
    return found


class ScriptedServer:
    """An OpenAI-style embeddings endpoint on 127.0.0.1 answering each request from ``script``.

    Actions: ``ok``; ``echo:<status>`` (error body holding the request's headers, path and query);
    ``429:<Retry-After value>``; ``zero:<i>`` / ``const:<i>`` (vector ``i`` of the batch degenerate).
    Any path is accepted, so tests can assert the path and query the client built.
    """

    def __init__(self) -> None:
        self.script: list[str] = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                req = json.loads(raw)
                url = urllib.parse.urlsplit(self.path)
                with server.lock:
                    action = server.script.pop(0) if server.script else "ok"
                    server.requests.append({"path": url.path, "query": url.query, "headers": dict(self.headers),
                                            "n_texts": len(req["input"]), "action": action})
                kind, _, arg = action.partition(":")
                if kind == "echo":  # a server that echoes everything it got
                    auth = self.headers.get("Authorization")
                    return self._send(int(arg), {"error": {"message": f"Incorrect API key provided: {auth}",
                                                           "request_url": self.path,
                                                           "request_headers": dict(self.headers)}})
                if kind == "echoenc":  # a server that echoes the key in the encodings of ECHOED_FORMS
                    bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                    return self._send(int(arg), {"error": {"message": "invalid key", "seen": {
                        name: encode(bearer) for name, encode in ECHOED_FORMS.items()}}})
                if kind == "429":
                    return self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": arg})
                vecs = snb.load_model("random-null").encode(req["input"])
                rows = [[float(x) for x in v] for v in vecs]
                if kind == "zero":
                    rows[int(arg)] = [0.0] * len(rows[0])
                elif kind == "const":
                    rows[int(arg)] = [0.03125] * len(rows[0])
                data = [{"object": "embedding", "embedding": r, "index": i} for i, r in enumerate(rows)]
                self._send(200, {"object": "list", "data": data, "model": req.get("model"),
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.host = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def server():
    s = ScriptedServer()
    yield s
    s.close()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def _secret_forms() -> list[str]:
    """The secrets, the forms they travel in (URL-encoded, HTTP Basic base64) and their first 12 characters
    (a message cut to length must not keep the start of a key either)."""
    forms = {KEY, URL_SECRET, KEY[:12], URL_SECRET[:12], urllib.parse.quote(KEY, safe=""),
             base64.b64encode(f"user:{URL_SECRET}".encode()).decode()}
    return sorted(forms)


def _leaks(texts: dict[str, str | bytes]) -> list[tuple[str, str]]:
    """(where, secret) for every secret form found in ``texts``."""
    out = []
    for where, t in texts.items():
        for s in _secret_forms():
            if (s.encode() if isinstance(t, bytes) else s) in t:
                out.append((where, s))
    return out


def _folder_contents(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# ------------------------------------------------------------------------------------- secrets


@pytest.mark.parametrize("status", [400, 404])
def test_cli_failing_run_never_shows_the_key(server, tmp_path, status):
    """A real `semanscope benchmark --api-model` run against an endpoint that echoes the request's
    headers and URL in its error body: stdout, stderr, results and cache hold no secret."""
    base_url = f"http://{server.host}/v1?api_key={URL_SECRET}"
    server.script[:] = [f"echo:{status}"] * 4
    n0 = len(server.requests)
    env = {**os.environ, KEY_ENV: KEY, "SEMANSCOPE_CACHE": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-m", "semanscope_nb", "benchmark", "--models", "leaky-api", "--datasets", "edge-cases",
         "--api-model", f"leaky-api=null-512@{base_url}", "--api-key-env", KEY_ENV, "--languages", "en,zh",
         "--max-concepts", "8", "--n-boot", "10", "--metrics", "sa", "--out", str(tmp_path / "results"),
         "--cache-dir", str(tmp_path / "cache")],
        check=False, capture_output=True, text=True, env=env, timeout=300)
    sent = server.requests[n0:]
    server.script.clear()
    # the secrets really were in play: the server got the Bearer key and the query credential ...
    assert sent and sent[0]["headers"]["Authorization"] == f"Bearer {KEY}" and URL_SECRET in sent[0]["query"]
    # ... the run failed and said why ...
    assert out.returncode == 1, out.stderr[-2000:]
    assert "FAILED leaky-api x edge-cases" in out.stdout and f"HTTP {status}" in out.stdout
    # ... and no output anywhere holds a secret
    texts: dict[str, str | bytes] = {"stdout": out.stdout, "stderr": out.stderr}
    texts.update(_folder_contents(tmp_path / "results"))
    texts.update(_folder_contents(tmp_path / "cache"))
    assert any(p.endswith("leaderboard.json") for p in texts) and any(str(tmp_path / "cache") in p for p in texts)
    leaks = _leaks(texts)
    assert not leaks, f"secrets found in: {leaks}"


@pytest.mark.parametrize("status", [400, 401])
@pytest.mark.parametrize("style", ["query", "userinfo"])
def test_python_api_failure_records_reprs_and_debug_logs_hold_no_secret(server, key, tmp_path, caplog, status, style):
    """The Python API with logging at DEBUG: exceptions, tracebacks, grid failure records, result files,
    the cache, the encoder's repr/options/version/cache key and every log record (httpx's included)."""
    caplog.set_level(logging.DEBUG)
    if style == "query":
        base_url = f"http://{server.host}/v1?api-version=2024-02-01&token={URL_SECRET}"
    else:
        base_url = f"http://user:{URL_SECRET}@{server.host}/v1"
    info = snb.register_api_model("faults-secret", base_url=base_url, model="null-512", api_key_env=KEY_ENV,
                                  dims=512, replace=True, max_retries=1)
    enc = snb.load_model("faults-secret")
    cache = snb.EmbeddingCache(tmp_path / "cache")
    n0 = len(server.requests)
    server.script[:] = [f"echo:{status}"] * 6
    with pytest.raises(ApiModelError) as e:
        snb.dataset_affinity("edge-cases", "faults-secret", languages=["en", "de"], cache=cache, n_boot=10)
    g = snb.run_grid(["faults-secret"], ["edge-cases"], metrics=["sa"], languages=["en", "de"], max_concepts=8,
                     params={"sa": {"n_boot": 10}}, cache=cache, out_dir=tmp_path / "results", progress=False)
    sent = server.requests[n0:]
    server.script.clear()
    if style == "query":  # what reached the server carried the secrets
        assert sent[0]["headers"]["Authorization"] == f"Bearer {KEY}" and f"token={URL_SECRET}" in sent[0]["query"]
    else:
        assert sent[0]["headers"]["Authorization"] == "Basic " + base64.b64encode(f"user:{URL_SECRET}".encode()).decode()
    assert g.failures and all(f"HTTP {status}" in f["error"] for f in g.failures.values())
    assert any(r.name == "httpx" and "HTTP Request: POST" in r.getMessage() for r in caplog.records)  # httpx logged the URL
    texts: dict[str, str | bytes] = {
        "exception": str(e.value),
        "traceback": "".join(traceback.format_exception(e.value)),
        "failures": json.dumps(g.failures),
        "log text": caplog.text,
        "log records": "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records),
        "repr": repr(enc), "options": json.dumps(enc.options), "version": enc.version, "model_id": enc.model_id,
        "cache_key": enc.cache_key, "info": json.dumps(info.to_dict()), "info repr": repr(info),
        "factory repr": repr(info.factory),
    }
    texts.update(_folder_contents(tmp_path / "results"))
    texts.update(_folder_contents(tmp_path / "cache"))
    assert any(str(tmp_path / "cache") in p for p in texts) and any(str(tmp_path / "results") in p for p in texts)
    leaks = _leaks(texts)
    assert not leaks, f"secrets found in: {leaks}"


@pytest.mark.parametrize("form", sorted(ECHOED_FORMS))
def test_redaction_covers_every_encoding_of_the_key(key, form):
    """Issue 20: each encoding a server may echo is redacted; neither the text nor any base64/hex decoding
    of it shows the key (the encoded text really held it before redaction)."""
    from semanscope_nb.models.api import _remember_secret, redact_secrets

    _remember_secret(KEY)
    echoed = f'{{"error": "invalid key", "seen": "{ECHOED_FORMS[form](KEY)}"}}'
    assert KEY[:12] in echoed or _recoverable(echoed, KEY), "the echo must hold the key to begin with"
    clean = redact_secrets(echoed)
    assert KEY[:12] not in clean and not _recoverable(clean, KEY), clean
    assert "***" in clean


@pytest.mark.parametrize("status", [400, 422])  # bodies of 401/403 are never shown
def test_encoded_key_in_a_4xx_body_never_reaches_the_exception(server, key, status):
    """A real request whose 4xx body echoes the Bearer key in every encoding of ECHOED_FORMS."""
    from semanscope_nb.models import register_api_model

    register_api_model("faults-encoded", base_url=f"http://{server.host}/v1", model="null-512", api_key_env=KEY_ENV,
                           dims=512, replace=True, max_retries=0)
    server.script[:] = [f"echoenc:{status}"]
    with pytest.raises(ApiModelError) as e:
        snb.load_model("faults-encoded").encode(["water", "fire"])
    server.script.clear()
    shown = str(e.value) + "".join(traceback.format_exception(e.value))
    assert f"HTTP {status}" in str(e.value)
    assert KEY[:12] not in shown and not _recoverable(shown, KEY), shown


# ------------------------------------------------------------------------------------- URLs


@pytest.mark.parametrize("suffix", ["", "/"])
def test_base_url_query_is_kept_and_embeddings_appended_to_the_path(server, key, suffix):
    """An Azure-style base URL: `/embeddings` goes on the path, `?api-version=` stays the query."""
    enc = OpenAIEmbeddingEncoder(base_url=f"http://{server.host}/openai/deployments/dep-1{suffix}?api-version=2024-02-01",
                                 model="null-512", api_key_env=KEY_ENV, dims=512)
    n0 = len(server.requests)
    v = enc.encode(WORDS)
    got = server.requests[n0:]
    assert [r["path"] for r in got] == ["/openai/deployments/dep-1/embeddings"]
    assert urllib.parse.parse_qs(got[0]["query"], keep_blank_values=True) == {"api-version": ["2024-02-01"]}
    np.testing.assert_array_equal(v, snb.load_model("random-null").encode(WORDS))


# ------------------------------------------------------------------------------------- degenerate vectors


@pytest.mark.parametrize("kind", ["zero", "const"])
def test_zero_or_constant_vector_is_rejected_naming_model_and_index_and_not_cached(server, key, tmp_path, kind):
    enc = OpenAIEmbeddingEncoder(base_url=f"http://{server.host}/v1", model="null-512", model_id="faults-degenerate",
                                 api_key_env=KEY_ENV, dims=512, max_batch_texts=4)
    cache = snb.EmbeddingCache(tmp_path)
    server.script[:] = ["ok", f"{kind}:1"]  # the second batch's second text: WORDS[5]
    with pytest.raises(snb.EmbeddingError, match=rf"faults-degenerate.*text index 5\b.*{WORDS[5]}") as e:
        cache.embed(enc, WORDS)
    assert ("all zeros" if kind == "zero" else "constant") in str(e.value)
    assert cache.count(enc.cache_key) == 0 and cache.count() == 0  # not even the good first batch
    server.script.clear()
    np.testing.assert_array_equal(cache.embed(enc, WORDS), snb.load_model("random-null").encode(WORDS))
    assert cache.count(enc.cache_key) == len(WORDS)


# ------------------------------------------------------------------------------------- Retry-After


def _backoff_range(attempt: int, backoff: float, max_backoff: float) -> tuple[float, float]:
    base = min(max_backoff, backoff * 2**attempt)
    return base, base * 1.25


def test_retry_after_is_capped_parsed_as_http_date_and_never_zero(server, key):
    backoff, max_backoff = 0.25, 10.0
    now = datetime.now(UTC)
    values = [
        "3600",                                            # 0: an hour -> the documented cap, 60 s
        "12",                                              # 1: honoured as is
        "nan",                                             # 2: not delay-seconds -> backoff, not 0 s
        "soon",                                            # 3: garbage -> backoff
        format_datetime(now + timedelta(seconds=20), usegmt=True),  # 4: an HTTP-date 20 s ahead
        format_datetime(now + timedelta(days=1), usegmt=True),      # 5: a day ahead -> the cap
        "Wed, 21 Oct 2015 07:28:00 GMT",                   # 6: a date in the past -> backoff, not 0 s
        "-5",                                              # 7: negative -> backoff
    ]
    enc = OpenAIEmbeddingEncoder(base_url=f"http://{server.host}/v1", model="null-512", api_key_env=KEY_ENV, dims=512,
                                 max_retries=len(values), backoff=backoff, max_backoff=max_backoff, seed=1)
    delays: list[float] = []
    enc._sleep = delays.append  # record instead of waiting
    server.script[:] = [f"429:{v}" for v in values]
    v = enc.encode(WORDS[:3])
    assert v.shape == (3, 512) and len(delays) == len(values) and server.script == []
    expected = {0: (60.0, 60.0), 5: (60.0, 60.0),  # capped at the documented MAX_RETRY_AFTER = 60 s
                1: (12.0, 12.0), 4: (18.0, 20.5)}
    expected.update({i: _backoff_range(i, backoff, max_backoff) for i in (2, 3, 6, 7)})
    wrong = [(values[i], delays[i], lo, hi) for i, (lo, hi) in sorted(expected.items()) if not lo <= delays[i] <= hi]
    assert wrong == []  # (Retry-After, delay used, allowed range)
    # a caller may lower the cap
    low = OpenAIEmbeddingEncoder(base_url=f"http://{server.host}/v1", model="null-512", api_key_env=KEY_ENV, dims=512,
                                 max_retry_after=5.0)
    low_delays: list[float] = []
    low._sleep = low_delays.append
    server.script[:] = ["429:3600"]
    low.encode(WORDS[:2])
    assert low_delays == [5.0]
