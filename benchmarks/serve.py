"""Load test of `contextlens serve` for answers, not status codes: 20 clients on mixed endpoints.

Usage: python benchmarks/serve.py [--model minilm] [--clients 20] [--per-endpoint 12] [--workers 2]
                                  [--threads N] [--no-health] [--json FILE]

The request set: ``--per-endpoint`` requests for each of compare, explore, attention, trace,
probe, rank and same-sense, every one with inputs of its own (a numbered sentence, another layer,
head, template, anchor or seed), so no two requests of the set are alike and the sentence
requests are not answered from the occurrence cache. Two real servers (`python -m contextlens
serve`, 127.0.0.1, subprocesses), each fresh and warmed up by the same seven requests (not in
the set; they load GloVe and tune the same-sense rule):

1. **sequential baseline**: `--workers 1`, one client sends the whole set, one request after the
   other; its answers are the reference and its requests/s the one-worker sequential rate;
2. **concurrent**: `--workers W`, ``--clients`` threads take the same requests from one shared
   queue (in a seeded shuffled order) until it is empty.

Then, in this process, the **bare sequential compute**: the same analyses the endpoints run
(``web.runs.PAGES[...].run``) called one after the other on one loaded model with serve's torch
threads, no HTTP, after the same warm-up: the floor a sequential server cannot beat. On a loaded
machine the HTTP baseline also pays the scheduler's wake-up latency for every hand-off between its
threads, which the concurrent run overlaps; the bare rate does not, so both ratios are printed.

Printed per endpoint: requests, p50 / p95 latency of the concurrent run beside the sequential
one, and answers equal to the sequential ones (JSON documents compared exactly); then the
throughput of each phase, the ratio, and the errors (any non-200 or exception; the claim is 0).
Unless ``--no-health``, a last phase times /health while one long request (explore, every
built-in word, 5000 permutations) holds a worker.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np

ENDPOINTS = ("compare", "explore", "attention", "trace", "probe", "rank", "same-sense")
PLACES = ["river", "money", "old", "small", "busy", "quiet", "green", "local", "savings", "muddy", "central", "far"]
ANCHORS = [["shore", "money"], ["water", "loan"], ["mud", "cash"], ["stream", "credit"]]
EXPLORE_WORDS = [["bank"], ["bat"], ["bank", "bat"], ["light"], ["bank", "light"], ["bat", "light"]]
WARM = {
    "compare": {"sentences": ["Warm [bank] one.", "Warm [bank] two."]},
    "explore": {"words": ["bank"], "permutations": 10},
    "attention": {"sentences": ["The warm [bank]."]},
    "trace": {"sentence": "The warm [bank]."},
    "probe": {"sentences": ["The warm [bank]."], "anchors": ["shore"]},
    "rank": {"top": 1},
    "same-sense": {"sentences": ["A warm [bank].", "A cold [bank]."], "quick": True},
}


def request_set(per_endpoint: int) -> list[tuple[str, dict]]:
    """``per_endpoint`` distinct requests per endpoint (see the module docstring). No sentence is in
    two requests: an answer then never depends on which other request's batch encoded (and cached)
    a sentence first, which moves a cosine in its 8th digit (another batch, other padding)."""
    out: list[tuple[str, dict]] = []
    for n in range(per_endpoint):
        w, v = PLACES[n % len(PLACES)], PLACES[(n + 5) % len(PLACES)]

        def pair(tag: str, n: int = n, w: str = w, v: str = v) -> list[str]:
            return [f"{tag} {n}: we sat by the {w} [bank].", f"{tag} {n}: I opened a {v} [bank] account."]

        out += [
            ("compare", {"sentences": [*pair("Compare"), f"Compare {n}: the [bank] approved it."]}),
            ("explore", {"words": EXPLORE_WORDS[n % len(EXPLORE_WORDS)], "layer": n % 7, "permutations": 200,
                         "seed": n}),
            ("attention", {"sentences": pair("Attention")[: 1 + n % 2], "layer": 1 + n % 6, "head": n % 12}),
            ("trace", {"sentence": f"Trace {n}: the {w} [bank] flooded after {n + 2} days.", "top": 1 + n % 5}),
            ("probe", {"sentences": pair("Probe"), "anchors": ANCHORS[n % len(ANCHORS)], "layer": n % 7}),
            ("rank", {"template": f"Pair {n}: the word is [{{word}}].", "layer": n % 7, "top": 1 + n % 5}),
            ("same-sense", {"sentences": pair("Same"), "quick": True, "layer": str(1 + n % 6)}),
        ]  # fmt: skip
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: str, port: int, workers: int, threads: int | None = None) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    # torch, as measured in docs/speed.md and as the in-process baseline loads it (serve defaults to auto)
    cmd = [sys.executable, "-m", "contextlens", "serve", "--model", model, "--port", str(port), "--runtime", "torch"]
    cmd += ["--workers", str(workers)] + ([] if threads is None else ["--threads", str(threads)])
    proc = subprocess.Popen(cmd, env=env)
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not answer /health within 180 s")


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs) * 1000, q)) if xs else float("nan")


def call(http: httpx.Client, endpoint: str, body: dict) -> tuple[float, dict | None, str | None]:
    """(seconds, the answer's JSON or None, why it failed or None)."""
    t0 = time.perf_counter()
    try:
        r = http.post(f"/api/{endpoint}", json=body)
        dt = time.perf_counter() - t0
        if r.status_code != 200:
            return dt, None, f"{endpoint} {r.status_code}: {r.text[:200]}"
        return dt, r.json(), None
    except httpx.HTTPError as exc:
        return time.perf_counter() - t0, None, f"{endpoint}: {exc!r}"


def served(model: str, workers: int, fn, threads: int | None = None):
    """Run ``fn(base)`` against a fresh, warmed-up server with ``workers`` workers (``threads``:
    serve's --threads, torch's intra-op threads; default serve's own)."""
    port = free_port()
    proc = start_server(model, port, workers, threads)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=300) as http:
            for endpoint, body in WARM.items():
                _, _, why = call(http, endpoint, body)
                if why:
                    raise SystemExit(f"warm-up failed: {why}")
        return fn(base)
    finally:
        proc.terminate()
        proc.wait(10)


def sequential(base: str, requests: list[tuple[str, dict]]) -> dict:
    times, answers, errors = [0.0] * len(requests), [None] * len(requests), []
    t0 = time.perf_counter()
    with httpx.Client(base_url=base, timeout=300) as http:
        for i, (endpoint, body) in enumerate(requests):
            times[i], answers[i], why = call(http, endpoint, body)
            if why:
                errors.append(why)
    return {"wall": time.perf_counter() - t0, "times": times, "answers": answers, "errors": errors}


def concurrent(base: str, requests: list[tuple[str, dict]], clients: int, seed: int) -> dict:
    order = list(range(len(requests)))
    random.Random(seed).shuffle(order)
    todo: queue.Queue[int] = queue.Queue()
    for i in order:
        todo.put(i)
    times, answers, errors = [0.0] * len(requests), [None] * len(requests), []
    lock = threading.Lock()

    def client() -> None:
        with httpx.Client(base_url=base, timeout=300) as http:
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                dt, answer, why = call(http, *requests[i])
                with lock:
                    times[i], answers[i] = dt, answer
                    if why:
                        errors.append(why)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"wall": time.perf_counter() - t0, "times": times, "answers": answers, "errors": errors}


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
    time.sleep(0.05)  # let it reach a worker
    health: list[float] = []
    with httpx.Client(base_url=base, timeout=30) as http:
        while not done.is_set():
            t0 = time.perf_counter()
            http.get("/health")
            health.append(time.perf_counter() - t0)
            time.sleep(0.02)
    thread.join()
    return {
        "long_request": long_result,
        "health_polls": len(health),
        "health_p50_ms": round(pct(health, 50), 2),
        "health_p95_ms": round(pct(health, 95), 2),
        "health_max_ms": round(max(health) * 1000, 2) if health else None,
    }


def bare(model: str, requests: list[tuple[str, dict]], threads: int | None = None) -> dict:
    """The endpoints' analyses called in this process, one after the other (no HTTP, no pool)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import torch

    from contextlens.cli.common import default_threads
    from contextlens.core.contextual_models import load_contextual
    from contextlens.web.pages import PAGES

    torch.set_num_threads(threads or default_threads())  # as serve sets them
    loaded = load_contextual(model)

    def run(endpoint: str, body: dict) -> dict:
        page = PAGES[endpoint]
        return json.loads(json.dumps(page.run(page.request.model_validate(body), loaded, {}).to_dict()))

    for endpoint, body in WARM.items():
        run(endpoint, body)
    times, answers = [0.0] * len(requests), [None] * len(requests)
    t0 = time.perf_counter()
    for i, (endpoint, body) in enumerate(requests):
        t1 = time.perf_counter()
        answers[i] = run(endpoint, body)
        times[i] = time.perf_counter() - t1
    return {"wall": time.perf_counter() - t0, "times": times, "answers": answers, "errors": []}


def table(requests: list[tuple[str, dict]], seq: dict, conc: dict, alone: dict) -> list[dict]:
    rows = []
    for endpoint in ENDPOINTS:
        idx = [i for i, (e, _) in enumerate(requests) if e == endpoint]
        same = sum(1 for i in idx if conc["answers"][i] is not None and conc["answers"][i] == seq["answers"][i])
        rows.append({
            "endpoint": endpoint,
            "requests": len(idx),
            "p50_ms": round(pct([conc["times"][i] for i in idx], 50), 1),
            "p95_ms": round(pct([conc["times"][i] for i in idx], 95), 1),
            "sequential_p50_ms": round(pct([seq["times"][i] for i in idx], 50), 1),
            "sequential_p95_ms": round(pct([seq["times"][i] for i in idx], 95), 1),
            "bare_p50_ms": round(pct([alone["times"][i] for i in idx], 50), 1),
            "equal_to_sequential": same,
            "bare_equal_to_sequential": sum(1 for i in idx if alone["answers"][i] == seq["answers"][i]),
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--per-endpoint", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="serve's --threads (torch intra-op threads)")
    parser.add_argument("--no-health", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    requests = request_set(args.per_endpoint)
    out: dict = {"model": args.model, "workers": args.workers, "clients": args.clients, "cpus": os.cpu_count(),
                 "threads": args.threads,
                 "load_average_before": os.getloadavg()[0]}  # fmt: skip
    seq = served(args.model, 1, lambda base: sequential(base, requests), args.threads)
    health: dict = {}

    def run_concurrent(base: str) -> dict:
        result = concurrent(base, requests, args.clients, args.seed)
        if not args.no_health:
            health.update(health_phase(base))
        return result

    conc = served(args.model, args.workers, run_concurrent, args.threads)
    alone = bare(args.model, requests, args.threads)
    rows = table(requests, seq, conc, alone)
    seq_rate, conc_rate = len(requests) / seq["wall"], len(requests) / conc["wall"]
    bare_rate = len(requests) / alone["wall"]
    out.update(
        requests=len(requests),
        per_endpoint=rows,
        sequential={"seconds": round(seq["wall"], 2), "requests_per_s": round(seq_rate, 2),
                    "errors": len(seq["errors"])},
        concurrent={"seconds": round(conc["wall"], 2), "requests_per_s": round(conc_rate, 2),
                    "errors": len(conc["errors"]), "first_errors": conc["errors"][:3]},
        bare={"seconds": round(alone["wall"], 2), "requests_per_s": round(bare_rate, 2)},
        throughput_ratio=round(conc_rate / seq_rate, 2),
        throughput_ratio_to_bare=round(conc_rate / bare_rate, 2),
        answers_equal=sum(r["equal_to_sequential"] for r in rows),
        load_average_after=os.getloadavg()[0],
    )  # fmt: skip
    if health:
        out["health_during_long_request"] = health
    load = out["load_average_before"]
    print(f"{args.model}, {len(requests)} requests, {args.clients} clients on --workers {args.workers} "
          f"vs 1 client on --workers 1 (baseline); {os.cpu_count()} CPUs, load {load:.1f}")  # fmt: skip
    print("| endpoint | requests | p50 ms | p95 ms | sequential p50 ms | sequential p95 ms | bare p50 ms "
          "| answers = sequential | bare = sequential |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['endpoint']} | {r['requests']} | {r['p50_ms']} | {r['p95_ms']} | {r['sequential_p50_ms']} | "
              f"{r['sequential_p95_ms']} | {r['bare_p50_ms']} | {r['equal_to_sequential']} of {r['requests']} | "
              f"{r['bare_equal_to_sequential']} of {r['requests']} |")  # fmt: skip
    load = os.getloadavg()[0]
    print(f"load average after: {load:.1f}")
    print(f"throughput: {conc_rate:.2f} requests/s concurrent vs {seq_rate:.2f} sequential (one worker) = "
          f"{conc_rate / seq_rate:.2f}x; bare sequential compute {bare_rate:.2f} requests/s = "
          f"{conc_rate / bare_rate:.2f}x; errors: {len(conc['errors'])} concurrent, {len(seq['errors'])} sequential; "
          f"answers equal: {out['answers_equal']} of {len(requests)}")  # fmt: skip
    if health:
        print(json.dumps(health))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    if conc["errors"] or seq["errors"] or out["answers_equal"] != len(requests):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
