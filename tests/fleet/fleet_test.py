#!/usr/bin/env python3
"""deploy/fleet/local.sh end to end: three real sparrowd replicas behind a real HAProxy.

Under a load of concurrent completions, one replica is drained through the admin API and
another is killed (SIGKILL) while it runs a long request. Asserts that no request is lost (every
one answers 200 with the same greedy text as the same prompt got before), that the killed
replica's running request was answered by another replica, that the drained replica admits
nothing after its drain, that requests sharing a route header or a prompt prefix land on one
replica, and that a streamed answer through the balancer carries usage when asked
(stream_options.include_usage). Behind the balancer (TLS and PROXY v2 to the replicas): ten bad
keys from one client lock that client out and no other, and the admin API is not reachable
through the public frontend. Exit 77 (skipped) when haproxy is not installed.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", flush=True)
    return cond


# Replicas speak HTTPS with the fleet's certificate; the balancer's public side plain HTTP.
TLS = {"ports": set(), "context": None}


def request(port, method, path, body=None, headers=None, timeout=120, source=None):
    source_address = (source, 0) if source else None
    if port in TLS["ports"]:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout,
                                           context=TLS["context"], source_address=source_address)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                          source_address=source_address)
    try:
        data = json.dumps(body).encode() if body is not None else None
        h = {"Content-Type": "application/json"} if data else {}
        h.update(API)
        h.update(headers or {})
        conn.request(method, path, body=data, headers=h)
        res = conn.getresponse()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    finally:
        conn.close()


def completion(port, prompt, max_tokens, route=None):
    headers = {"X-Sparrow-Route": route} if route else {}
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    status, headers, raw = request(port, "POST", "/v1/completions", body, headers)
    text = json.loads(raw)["choices"][0]["text"] if status == 200 else raw.decode(errors="replace")
    return status, headers.get("x-sparrow-replica", ""), text


def metric(port, name):
    status, _, raw = request(port, "GET", "/metrics", headers=ADMIN)
    total = 0.0
    for line in raw.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def free_base_port(count):
    for _ in range(200):
        base = random.randrange(20000, 60000 - count)
        socks = []
        try:
            for p in range(base, base + count + 1):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free range of ports on 127.0.0.1")


ADMIN = {}
API = {}  # the inference key every request sends unless it names another
API_KEY = "fleet-inference-key-" + "%016x" % random.getrandbits(64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--local-sh", required=True)
    ap.add_argument("--sparrowd", required=True)
    ap.add_argument("--sparrow", required=True)
    ap.add_argument("--vocab", required=True)
    args = ap.parse_args()
    if shutil.which("haproxy") is None:
        print("SKIP: haproxy is not installed (apt-get install haproxy; deploy/setup-deps.sh does)")
        return 77

    work = tempfile.mkdtemp(prefix="sparrow-fleet-test.")
    # A model slow enough (2 layers of SmolLM2-135M's shape, ~3 ms a token on one thread) that
    # a 1000-token request is surely still running when its replica is killed.
    model = os.path.join(work, "model.gguf")
    subprocess.run([args.sparrow, "mkmodel", "--shape", "smollm2-135m", "--layers", "2",
                    "--type", "q8_0", "--vocab", args.vocab, "-t", "1", "-o", model],
                   check=True, stdout=subprocess.DEVNULL)
    port = free_base_port(3)
    fleet_dir = os.path.join(work, "fleet")
    api_keys = os.path.join(work, "api.keys")
    with open(api_keys, "w") as f:
        f.write(API_KEY + "\n")
    os.chmod(api_keys, 0o600)
    fleet = subprocess.Popen(
        [args.local_sh, "--replicas", "3", "--model", model, "--port", str(port), "--dir",
         fleet_dir, "--sparrowd", args.sparrowd, "--", "--threads", "1", "--max-running", "4",
         "--api-key-file", api_keys],
        start_new_session=True)
    try:
        return run(fleet, fleet_dir, port)
    finally:
        try:
            os.killpg(fleet.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            fleet.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(fleet.pid, signal.SIGKILL)
            fleet.wait()
        if FAILURES:
            for name in sorted(os.listdir(fleet_dir)):
                if name.endswith(".log"):
                    print(f"--- {name} (last lines)")
                    with open(os.path.join(fleet_dir, name), errors="replace") as f:
                        print("".join(f.readlines()[-15:]))
        if not FAILURES:
            shutil.rmtree(work, ignore_errors=True)


def lockout_is_per_client(port):
    """Ten bad keys from one client (127.0.0.2) through the balancer lock that client out and
    nobody else (127.0.0.3): the replicas count the client HAProxy names in its PROXY header,
    not HAProxy. One route key, so every request goes to one replica."""
    route = {"X-Sparrow-Route": "lockout"}
    bad = dict(route, Authorization="Bearer not-the-key-of-anyone")
    statuses = [request(port, "GET", "/v1/models", headers=bad, source="127.0.0.2")[0]
                for _ in range(10)]
    check(statuses == [401] * 10, f"ten bad keys from 127.0.0.2: {statuses}")
    status, headers, raw = request(port, "GET", "/v1/models", headers=route, source="127.0.0.2")
    check(status == 429, f"127.0.0.2, locked out, with the right key: {status} {raw[:200]}")
    locked_on = headers.get("x-sparrow-replica")
    status, headers, raw = request(port, "GET", "/v1/models", headers=route, source="127.0.0.3")
    check(status == 200,
          f"another client (127.0.0.3) after 127.0.0.2's lockout: {status} {raw[:200]}")
    check(headers.get("x-sparrow-replica") == locked_on,
          f"both clients on one replica: {locked_on} and {headers.get('x-sparrow-replica')}")


def admin_is_off_the_public_frontend(port, replica_port):
    for path in ["/admin/v1/status", "/admin/v1/drain", "/dashboard/", "/ADMIN/v1/status"]:
        status, headers, _ = request(port, "GET", path, headers=ADMIN)
        check(status == 404 and "x-sparrow-replica" not in headers,
              f"{path} through the balancer: {status}, replica {headers.get('x-sparrow-replica')}")
    status, _, _ = request(replica_port["replica1"], "GET", "/admin/v1/status", headers=ADMIN)
    check(status == 200, f"/admin/v1/status on a replica directly (HTTPS): {status}")


def run(fleet, fleet_dir, port):
    ready = os.path.join(fleet_dir, "ready")
    deadline = time.monotonic() + 120  # a guard against a hung start, not a speed check
    while not os.path.exists(ready):
        if fleet.poll() is not None:
            print(f"FAIL: local.sh exited with {fleet.returncode} before it was ready")
            return 1
        if time.monotonic() > deadline:
            print("FAIL: local.sh was not ready after 120 s")
            return 1
        time.sleep(0.1)
    with open(os.path.join(fleet_dir, "admin.keys")) as f:
        ADMIN["Authorization"] = "Bearer " + f.read().split()[1]
    API["Authorization"] = "Bearer " + API_KEY
    replica_port = {f"replica{i}": port + i for i in (1, 2, 3)}
    TLS["ports"] = set(replica_port.values())
    TLS["context"] = ssl.create_default_context(cafile=os.path.join(fleet_dir, "sparrow.crt"))

    lockout_is_per_client(port)
    admin_is_off_the_public_frontend(port, replica_port)

    # /ready on a replica: 200 while it admits.
    status, _, raw = request(port + 1, "GET", "/ready")
    check(status == 200 and json.loads(raw)["ready"] is True, f"/ready of a fresh replica: {raw}")

    # Affinity: one route key, one replica; prompts sharing their first 256 bytes, one replica.
    where = {}
    for key in [f"user-{i}" for i in range(12)]:
        seen = {completion(port, f"Tell me about {key} and {n}", 4, route=key)[1] for n in range(3)}
        check(len(seen) == 1, f"route {key} went to {sorted(seen)}, not one replica")
        where[key] = seen.pop()
    check(len(set(where.values())) == 3, f"12 route keys used only {sorted(set(where.values()))}")
    prefix = "Once upon a time, in a village by the sea, " * 8  # > 256 bytes
    seen = {completion(port, prefix + tail, 4)[1] for tail in ["a cat", "a dog", "a bird"]}
    check(len(seen) == 1, f"prompts sharing a 256-byte prefix went to {sorted(seen)}")
    system = {"role": "system", "content": "You are a terse assistant who answers in rhyme."}
    seen = set()
    for question in ["Why is the sky blue?", "What is a fox?", "Where is Rome?"]:
        body = {"messages": [system, {"role": "user", "content": question}], "max_tokens": 4}
        status, headers, _ = request(port, "POST", "/v1/chat/completions", body)
        check(status == 200, f"chat through the balancer: {status}")
        seen.add(headers.get("x-sparrow-replica"))
    check(len(seen) == 1, f"chats sharing a system prompt went to {sorted(seen)}")

    # A stream through the balancer carries usage in its last chunk when asked.
    body = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 6, "stream": True,
            "stream_options": {"include_usage": True}}
    status, _, raw = request(port, "POST", "/v1/chat/completions", body)
    chunks = [json.loads(line[6:]) for line in raw.decode().splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    usage = chunks[-1].get("usage") if chunks else None
    check(status == 200 and usage is not None and usage["completion_tokens"] == 6,
          f"streamed usage through the balancer: {usage}")

    # The replica to kill runs a long request that its route key sends to it.
    victim = "replica2"
    victim_key = next((k for k, r in where.items() if r == victim), None)
    if not check(victim_key is not None, "no route key of the 12 went to replica2"):
        return 1
    long_prompt = "The long road"
    status, served_by, long_text = completion(port, long_prompt, 1000, route=victim_key)
    check(status == 200 and served_by == victim, f"the long request first: {status} {served_by}")

    # The load: four clients, each a loop of completions over the 12 route keys (so every
    # replica has its share), one prompt per key.
    prompts = {key: f"A story for {key}: once upon a time" for key in where}
    results, lock, stop = [], threading.Lock(), threading.Event()

    def client(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            key = rng.choice(sorted(prompts))
            p = prompts[key]
            try:
                r = completion(port, p, 48, route=key)
            except OSError as e:  # a lost request: the balancer closed on us
                r = (0, "", f"connection error: {e}")
            with lock:
                results.append((p,) + r)

    def wait_results(n):
        goal = len(results) + n
        while len(results) < goal:
            time.sleep(0.05)

    clients = [threading.Thread(target=client, args=(s,)) for s in range(4)]
    for t in clients:
        t.start()
    wait_results(12)

    # Drain replica1 and, before the balancer's checks have seen it, kill replica2 while it
    # runs a long request: retries must then avoid both.
    drained = "replica1"
    status, _, raw = request(replica_port[drained], "POST", "/admin/v1/drain", headers=ADMIN)
    check(status == 200, f"drain: {status} {raw}")
    status, _, raw = request(replica_port[drained], "GET", "/ready")
    check(status == 503 and json.loads(raw)["reason"] == "draining", f"/ready drained: {raw}")

    # Kill replica2 while the long request runs on it.
    long_result = {}

    def long_request():
        long_result["r"] = completion(port, long_prompt, 1000, route=victim_key)

    t_long = threading.Thread(target=long_request)
    t_long.start()
    while metric(replica_port[victim], "sparrow_running") < 1:
        time.sleep(0.005)
    with open(os.path.join(fleet_dir, "replica-2.pid")) as f:
        os.kill(int(f.read()), signal.SIGKILL)
    t_long.join()
    wait_results(12)
    # What the drained replica had admitted is finished by now; it must admit nothing more.
    while not json.loads(request(replica_port[drained], "GET", "/admin/v1/status",
                                 headers=ADMIN)[2])["drained"]:
        time.sleep(0.05)
    finished_at_drain = metric(replica_port[drained], "sparrow_requests_total")
    wait_results(12)
    stop.set()
    for t in clients:
        t.join()

    status, served_by, text = long_result["r"]
    check(status == 200 and served_by not in ("", victim),
          f"the request running on the killed replica: {status}, served by '{served_by}'")
    check(text == long_text, "the retried long request's text differs from its first answer")

    lost = [r for r in results if r[1] != 200]
    check(not lost, f"{len(lost)} of {len(results)} requests lost, e.g. {lost[:3]}")
    first = {}
    for p, status, replica, text in results:
        if status == 200:
            first.setdefault(p, text)
            check(text == first[p], f"'{p}' answered differently by {replica}")
    finished_after = metric(replica_port[drained], "sparrow_requests_total")
    check(finished_after == finished_at_drain,
          f"the drained replica finished {finished_after - finished_at_drain} requests after it "
          "had drained")
    by_replica = {}
    for r in results:
        by_replica[r[2]] = by_replica.get(r[2], 0) + 1
    print(f"fleet: {len(results)} requests under load, {len(lost)} lost, by replica {by_replica}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
