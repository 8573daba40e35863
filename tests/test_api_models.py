"""API embedding models against a real OpenAI-compatible HTTP server on 127.0.0.1 (stdlib http.server in a thread).

The server embeds with offline models from the registry (use-multilingual, random-null), so
the API path's vectors can be compared with the local model's.  Faults are injected per request.
"""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

import semanscope_nb as snb
from semanscope_nb.models.api import ApiModelError, OpenAIEmbeddingEncoder, estimate_api_cost, estimate_tokens

KEY = "sk-test-SECRET-7f3a9c"
KEY_ENV = "SNB_TEST_API_KEY"


class EmbeddingServer:
    """OpenAI /v1/embeddings served from local models; ``script`` holds one fault per upcoming request."""

    def __init__(self, models: dict[str, str]) -> None:
        self.models = models  # endpoint model name -> registry id
        self.script: list[str] = []
        self.requests: list[dict] = []  # every /embeddings request: model, n_texts, auth ok
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output quiet
                pass

            def _send(self, status, payload, headers=None):
                body = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                req = json.loads(raw)
                with server.lock:
                    action = server.script.pop(0) if server.script else "ok"
                    server.requests.append({"model": req.get("model"), "n_texts": len(req["input"]), "action": action})
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    return self._send(401, {"error": {"message": "Incorrect API key provided"}})
                if req.get("model") not in server.models:
                    return self._send(404, {"error": {"message": f"model {req.get('model')} not found"}})
                if action == "429":
                    return self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": "7"})
                if action.isdigit():
                    return self._send(int(action), {"error": {"message": "server error"}})
                if action == "slow":
                    time.sleep(1.5)
                vecs = snb.load_model(server.models[req["model"]]).encode(req["input"])
                data = [{"object": "embedding", "embedding": [float(x) for x in v], "index": i} for i, v in enumerate(vecs)]
                if action == "wrong-dim":
                    data[-1]["embedding"] = data[-1]["embedding"][:-1]
                elif action == "wrong-count":
                    data = data[:-1]
                elif action == "shuffle":
                    data = data[::-1]
                n_tok = sum(len(t) for t in req["input"])
                self._send(200, {"object": "list", "data": data, "model": req["model"],
                                 "usage": {"prompt_tokens": n_tok, "total_tokens": n_tok}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def embedding_requests(self) -> int:
        return len(self.requests)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def server():
    s = EmbeddingServer({"use-multilingual": "use-multilingual", "null-512": "random-null"})
    yield s
    s.close()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def _register(server, id_, model="null-512", **kw):
    kw.setdefault("dims", 512)
    return snb.register_api_model(id_, base_url=server.url, model=model, api_key_env=KEY_ENV, replace=True, **kw)


def _encoder(server, **kw) -> OpenAIEmbeddingEncoder:
    kw.setdefault("dims", 512)
    enc = OpenAIEmbeddingEncoder(base_url=server.url, model=kw.pop("model", "null-512"), api_key_env=KEY_ENV, **kw)
    delays: list[float] = []
    enc._sleep = delays.append  # record the backoff instead of waiting
    enc.delays = delays
    return enc


WORDS = ["water", "fire", "水", "火", "Wasser", "Feuer", "eau", "feu", "agua", "fuego", "みず", "ひ"]


@pytest.mark.slow
def test_vectors_equal_local_model_batches_and_the_cache_saves_the_second_call(server, key, tmp_path):
    _register(server, "test-api-use", model="use-multilingual", max_batch_texts=16)
    ds = snb.load_dataset("edge-cases", languages=["en", "zh"]).subset(range(30))
    cache = snb.EmbeddingCache(tmp_path)
    n0 = server.embedding_requests()
    api = snb.dataset_affinity(ds, "test-api-use", cache=cache, n_boot=100, seed=1)
    n_texts = len(ds.all_texts())
    sent = server.requests[n0:]
    assert len(sent) == math.ceil(n_texts / 16) and all(r["n_texts"] <= 16 for r in sent)
    assert sum(r["n_texts"] for r in sent) == n_texts
    local = snb.dataset_affinity(ds, "use-multilingual", cache=False, n_boot=100, seed=1)
    # The server embeds batches of 16, the local model one batch: the USE port's vectors move with their batch by
    # at most its vector_tolerance per coordinate (models/encoders.py), so a cosine moves by at most
    # eps = 2 sqrt(d) * tolerance (|u.v - u'.v'| <= |u - u'| + |v - v'| for unit vectors), and so does a Euclidean
    # distance between unit vectors; means and RMS of such values move by at most eps, and
    # SA = intra / (intra + inter) by at most eps / (intra + inter).
    tol = snb.load_model("use-multilingual").vector_tolerance
    eps = 2 * math.sqrt(512) * tol
    for part in ("cosine", "euclidean"):
        a, b = getattr(api, part), getattr(local, part)
        np.testing.assert_allclose(a.sa, b.sa, rtol=0, atol=eps / (b.intra + b.inter),
                                   err_msg=f"{part} SA: API (batches of 16) vs local (one batch) beyond the USE port's batch tolerance")
    assert api.tier == local.tier  # a decision, away from the thresholds here: equal
    enc = snb.load_model("test-api-use")
    texts = ds.all_texts()
    np.testing.assert_allclose(cache.embed(enc, texts), snb.load_model("use-multilingual").encode(texts), rtol=0, atol=tol,
                               err_msg="the same USE weights in batches of 16 vs one batch: within the port's vector_tolerance")
    n1 = server.embedding_requests()
    again = snb.dataset_affinity(ds, "test-api-use", cache=cache, n_boot=100, seed=1)
    assert server.embedding_requests() == n1  # every second call is free
    assert again.provenance["embedding"]["n_encoded"] == 0
    # the same cached vectors and the same arithmetic in one process: only float64 summation order could differ
    np.testing.assert_allclose(again.cosine.sa, api.cosine.sa, rtol=1e-12, err_msg="same cached vectors, same SA")
    assert api.provenance["model_options"]["endpoint_model"] == "use-multilingual"
    assert cache.count(enc.cache_key) == n_texts and "use-multilingual" in enc.cache_key and "127.0.0.1" not in enc.cache_key


def test_retries_on_429_and_5xx_respect_retry_after_and_give_up(server, key, tmp_path):
    enc = _encoder(server, backoff=1.0, seed=3)
    server.script[:] = ["429", "500", "503"]
    n0 = server.embedding_requests()
    v = enc.encode(WORDS)
    assert server.embedding_requests() - n0 == 4 and v.shape == (len(WORDS), 512)
    assert [w for w, _ in enc.retry_log] == ["HTTP 429", "HTTP 500", "HTTP 503"]
    assert enc.delays[0] == 7.0  # Retry-After honoured
    assert 2.0 <= enc.delays[1] <= 2.5 and 4.0 <= enc.delays[2] <= 5.0  # backoff 1 * 2**attempt, +<=25% jitter
    np.testing.assert_array_equal(v, snb.load_model("random-null").encode(WORDS))
    # out of retries: a clear error and nothing cached
    enc2 = _encoder(server, max_retries=2)
    server.script[:] = ["500", "502", "500"]
    cache = snb.EmbeddingCache(tmp_path)
    with pytest.raises(ApiModelError, match=r"still failing after 3 attempts \(last: HTTP 500"):
        cache.embed(enc2, WORDS)
    assert cache.count(enc2.cache_key) == 0 and server.script == []


def test_slow_response_times_out_and_is_retried(server, key):
    enc = _encoder(server, timeout=0.4, connect_timeout=0.4)
    server.script[:] = ["slow"]
    v = enc.encode(WORDS[:4])
    assert enc.retry_log and "Timeout" in enc.retry_log[0][0] and v.shape == (4, 512)
    server.script[:] = ["slow", "slow"]
    enc3 = _encoder(server, timeout=0.4, max_retries=1)
    with pytest.raises(ApiModelError, match=r"after 2 attempts .*ReadTimeout, timeout 0.4 s"):
        enc3.encode(WORDS[:2])


@pytest.mark.parametrize("fault,match", [("wrong-dim", r"dimension\(s\) \[511, 512\] but 512 expected"),
                                         ("wrong-count", r"sent 12 texts, got 11 vectors back")])
def test_wrong_dimension_or_count_is_rejected_and_not_cached(server, key, tmp_path, fault, match):
    cache = snb.EmbeddingCache(tmp_path)
    enc = _encoder(server)
    server.script[:] = [fault]
    with pytest.raises(snb.EmbeddingError, match=match):
        cache.embed(enc, WORDS)
    assert cache.count(enc.cache_key) == 0
    # the dims= check also catches a model that is consistently of another size
    enc_dims = _encoder(server, dims=384)
    with pytest.raises(snb.EmbeddingError, match=r"but 384 expected"):
        cache.embed(enc_dims, WORDS)
    assert cache.count() == 0
    cache.embed(enc, WORDS)
    assert cache.count(enc.cache_key) == len(WORDS)


def test_shuffled_indices_are_put_back_in_order(server, key):
    enc = _encoder(server)
    server.script[:] = ["shuffle"]
    np.testing.assert_array_equal(enc.encode(WORDS), snb.load_model("random-null").encode(WORDS))


def test_missing_key_fails_before_any_request(server, monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_ENV, raising=False)
    _register(server, "test-api-nokey")
    n0 = server.embedding_requests()
    with pytest.raises(ApiModelError, match=rf"needs an API key in the environment variable {KEY_ENV}, which is not set"):
        snb.dataset_affinity("edge-cases", "test-api-nokey", languages=["en", "zh"], cache=snb.EmbeddingCache(tmp_path), n_boot=0)
    assert server.embedding_requests() == n0


def test_401_and_404_fail_at_once_with_clear_errors(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-wrong-key-000")
    enc = _encoder(server)
    n0 = server.embedding_requests()
    with pytest.raises(ApiModelError, match=rf"refused the credentials \(HTTP 401\): check the key in \${KEY_ENV}") as e:
        enc.encode(WORDS)
    assert server.embedding_requests() - n0 == 1 and "sk-wrong-key-000" not in str(e.value)
    monkeypatch.setenv(KEY_ENV, KEY)
    with pytest.raises(ApiModelError, match=r"HTTP 404 .*unknown model name or wrong base URL"):
        _encoder(server, model="no-such-model").encode(WORDS)
    bad_url = OpenAIEmbeddingEncoder(base_url=server.url.removesuffix("/v1"), model="null-512", api_key_env=KEY_ENV)
    with pytest.raises(ApiModelError, match="include /v1 in base_url"):
        bad_url.encode(WORDS)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="base_url must be an http"):
        OpenAIEmbeddingEncoder(base_url="api.openai.com", model="m")
    with pytest.raises(ValueError, match="max_batch_texts must be a positive integer"):
        OpenAIEmbeddingEncoder(base_url="http://x/v1", model="m", max_batch_texts=0)
    with pytest.raises(ValueError, match="send_dimensions=True needs dims="):
        OpenAIEmbeddingEncoder(base_url="http://x/v1", model="m", send_dimensions=True)


def test_key_never_in_results_cache_provenance_or_logs(server, key, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    _register(server, "test-api-secret")
    server.script[:] = ["429"]
    cache = snb.EmbeddingCache(tmp_path / "cache")
    enc = snb.load_model("test-api-secret")
    enc._sleep = lambda s: None
    r = snb.dataset_affinity("edge-cases", "test-api-secret", languages=["en", "de"], cache=cache, n_boot=20)
    g = snb.run_grid(["test-api-secret"], ["edge-cases"], metrics=["sa", "retrieval"], languages=["en", "de"], max_concepts=20,
                     params={"sa": {"n_boot": 20}}, cache=cache, out_dir=tmp_path / "results", progress=False)
    assert not g.failures and len(g.records) == 2
    assert "HTTP 429" in caplog.text  # the retry was logged ...
    texts = [caplog.text, json.dumps(r.to_dict()), repr(enc), json.dumps(enc.options), enc.cache_key,
             json.dumps(snb.get_model_info("test-api-secret").to_dict())]
    texts += [p.read_text() for p in (tmp_path / "results").rglob("*") if p.is_file()]
    blobs = [p.read_bytes() for p in (tmp_path / "cache").iterdir() if p.is_file()]
    assert all(KEY not in t for t in texts) and all(KEY.encode() not in b for b in blobs)  # ... but never the key
    assert KEY_ENV in snb.get_model_info("test-api-secret").notes  # the variable's name is fine to show


def test_cost_estimate_counts_only_uncached_texts(server, key, tmp_path):
    _register(server, "test-api-cost", max_batch_texts=5, price_per_million_tokens=0.02)
    cache = snb.EmbeddingCache(tmp_path)
    words = snb.load_dataset("conceptual-space").all_texts()[:40]
    cache.embed(snb.load_model("test-api-cost"), words[:20])
    est = estimate_api_cost("test-api-cost", words, cache=cache)
    missing = words[20:]
    expected_tokens = sum(max(1, -(-len(w.encode("utf-8")) // 4)) for w in missing)  # ceil(bytes / 4), independently
    assert (est.n_texts, est.n_cached, est.n_uncached, est.n_requests) == (40, 20, 20, 4)
    assert est.estimated_tokens == expected_tokens == estimate_tokens(missing)
    assert est.estimated_cost == pytest.approx(expected_tokens * 0.02 / 1e6)
    assert "20 of 40 texts not cached -> 4 request(s)" in est.describe()


def test_cli_prints_the_cost_estimate_before_the_run(server, tmp_path):
    env = {**os.environ, KEY_ENV: KEY, "SEMANSCOPE_CACHE": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-m", "semanscope_nb", "benchmark", "--models", "cli-api", "--datasets", "edge-cases",
         "--api-model", f"cli-api=null-512@{server.url}", "--api-key-env", KEY_ENV, "--languages", "en,zh",
         "--max-concepts", "15", "--n-boot", "20", "--metrics", "sa", "--out", str(tmp_path / "r")],
        capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "cost estimate" in out.stderr and "cli-api:" in out.stderr and "texts not cached" in out.stderr
    assert out.stderr.index("cost estimate") < out.stderr.index("cli-api x edge-cases")
    assert KEY not in out.stdout + out.stderr
    rows = json.loads((tmp_path / "r" / "leaderboard.json").read_text())["rows"]
    assert rows and rows[0]["model"] == "cli-api"
