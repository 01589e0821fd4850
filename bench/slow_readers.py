#!/usr/bin/env python3
"""Slow readers: four clients send a non-streamed chat request with n 16 and top_logprobs 20 to a
sparrowd on stories260K and never read the answer (4 KiB receive buffers); the server drops them at
its write timeout (2 s here). Prints sparrowd's RSS at start, its peak and 40 s later.

  bench/slow_readers.py SPARROWD [MODEL]
"""
import json
import socket
import subprocess
import sys
import time
binary = sys.argv[1]
p = subprocess.Popen([binary, "--model", sys.argv[2] if len(sys.argv) > 2 else "../shared/models/stories260K.gguf", "--port", "18555", "--grpc-port", "-1", "--threads", "2", "--write-timeout-ms", "2000"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
time.sleep(1.0)
def rss():
    for l in open(f"/proc/{p.pid}/status"):
        if l.startswith("VmRSS:"): return int(l.split()[1]) // 1024
start = rss()
body = json.dumps({"messages": [{"role": "user", "content": "Tell me a story"}], "n": 16, "logprobs": True, "top_logprobs": 20, "max_tokens": 400}).encode()
socks = []
for i in range(4):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", 18555))
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    socks.append(s)
peak = start
t0 = time.time()
while time.time() - t0 < 40:
    peak = max(peak, rss()); time.sleep(0.2)
end = rss()
print(json.dumps({"binary": binary, "rss_start_mib": start, "rss_peak_mib": peak, "rss_after_40s_mib": end}))
p.kill()
