"""Load test of `contextlens serve`: concurrent clients on POST /api/compare, then /health during a long request.

Usage: python benchmarks/serve.py [--model minilm] [--clients 20] [--seconds 60] [--workers 2] [--json FILE]

Starts the real server (`python -m contextlens serve`) on 127.0.0.1 in a subprocess, waits for
/health, then runs two phases:
1. ``--clients`` threads each POST /api/compare back to back for ``--seconds``; every request has
   sentences of its own (client and counter in the text), so no result is served from a cache.
   Reports requests/s, p50/p95/max latency and the number of errors (non-200 or exceptions).
   /health is polled every 100 ms meanwhile (the worker pool is saturated all along).
2. One long request (explore, every built-in word, 5000 permutations) while /health is polled
   every 20 ms; reports the /health p50/p95/max and the long request's own time.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np

WORDS = ["river", "money", "old", "small", "busy", "quiet", "green", "local"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: str, port: int, workers: int) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-m", "contextlens", "serve", "--model", model, "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--workers", str(workers)], env=env)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not answer /health within 120 s")


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs) * 1000, q)) if xs else float("nan")


def load_phase(base: str, clients: int, seconds: float) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.time() + seconds

    def client(cid: int) -> None:
        n = 0
        with httpx.Client(base_url=base, timeout=120) as http:
            while time.time() < stop:
                w = WORDS[(cid + n) % len(WORDS)]
                texts = [f"Client {cid} sat by the {w} [bank] {n}.", f"Request {n} opened a [bank] account."]
                body = {"sentences": texts}
                t0 = time.perf_counter()
                try:
                    r = http.post("/api/compare", json=body)
                    ok = r.status_code == 200 and "layers" in r.json()
                    why = f"{r.status_code}: {r.text[:200]}"
                except httpx.HTTPError as exc:
                    ok, why = False, repr(exc)
                dt = time.perf_counter() - t0
                with lock:
                    (latencies.append(dt) if ok else errors.append(why))
                n += 1

    health: list[float] = []

    def poll_health() -> None:
        with httpx.Client(base_url=base, timeout=30) as http:
            while time.time() < stop:
                t0 = time.perf_counter()
                http.get("/health")
                health.append(time.perf_counter() - t0)
                time.sleep(0.1)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    threads.append(threading.Thread(target=poll_health))
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / wall, 2),
        "p50_ms": round(pct(latencies, 50), 1),
        "p95_ms": round(pct(latencies, 95), 1),
        "max_ms": round(max(latencies) * 1000, 1) if latencies else None,
        "errors": len(errors),
        "first_errors": errors[:3],
        "health_p95_ms_under_load": round(pct(health, 95), 1),
        "health_max_ms_under_load": round(max(health) * 1000, 1) if health else None,
    }


def health_phase(base: str) -> dict:
    done = threading.Event()
    long_result: dict = {}

    def long_request() -> None:
        t0 = time.perf_counter()
        r = httpx.post(f"{base}/api/explore", json={"words": [], "permutations": 5000}, timeout=600)
        long_result.update(status=r.status_code, seconds=round(time.perf_counter() - t0, 2))
        done.set()

    thread = threading.Thread(target=long_request)
    thread.start()
    time.sleep(0.3)  # let it reach a worker
    health: list[float] = []
    busy_seen = 0
    with httpx.Client(base_url=base, timeout=30) as http:
        while not done.is_set():
            t0 = time.perf_counter()
            r = http.get("/health")
            health.append(time.perf_counter() - t0)
            busy_seen = max(busy_seen, r.json()["busy"])
            time.sleep(0.02)
    thread.join()
    return {
        "long_request": long_result,
        "health_polls": len(health),
        "health_p50_ms": round(pct(health, 50), 2),
        "health_p95_ms": round(pct(health, 95), 2),
        "health_max_ms": round(max(health) * 1000, 2) if health else None,
        "busy_seen": busy_seen,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    port = free_port()
    proc = start_server(args.model, port, args.workers)
    base = f"http://127.0.0.1:{port}"
    try:
        httpx.post(f"{base}/api/compare", json={"sentences": ["a [bank].", "the [bank]."]}, timeout=120)  # warm up
        out = {"model": args.model, "workers": args.workers, "cpus": os.cpu_count()}
        out["load"] = load_phase(base, args.clients, args.seconds)
        print(json.dumps(out["load"]), flush=True)
        out["health_during_long_request"] = health_phase(base)
        print(json.dumps(out["health_during_long_request"]), flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
