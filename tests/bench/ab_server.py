#!/usr/bin/env python3
"""A/B of two or more inferd builds (or flag sets) over HTTP: every daemon
serves a copy of one model at once, and each round runs wrk against each
in turn per case, so a slow spell of this shared VM hits every build
alike. Per build and case, the medians over the rounds of: requests/s,
wrk's p50 and p99, the server's own time per request (the stats
endpoint's request time minus compute_infer, a mean), and the daemon's
CPU time per request (all its threads, from /proc: what a request costs,
whatever share of the cores the daemon got).

    tests/bench/ab_server.py [--rounds 5] [--duration 2] [--model lenet5]
        [--cases "binary:1 json:64 binary:64"] NAME=INFERD[,FLAG,...] ...
    tests/bench/ab_server.py old=/tmp/old/build/inferd new=build/inferd \\
        new0=build/inferd,--inline-batch-us,0

The payloads are one random row in the model's input shape (FP32, values
as a normalised image has them), JSON with %.7g numbers or binary tensors
both ways; each daemon runs 2 HTTP threads, as make bench-server's.
Needs wrk (make deps-wrk).
"""
import argparse
import json
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


def model_input(model_dir):
    with open(os.path.join(model_dir, "model.json")) as f:
        m = json.load(f)
    inp, out = m["inputs"][0], m["outputs"][0]
    return inp["name"], [1] + inp["shape"][1:], out["name"]


def write_payloads(work, model_dir):
    name, shape, out_name = model_input(model_dir)
    n = 1
    for d in shape:
        n *= d
    rng = random.Random(1)
    x = [(0 if rng.random() < 0.5 else rng.randint(1, 255)) / 255.0 * 2.8 - 0.8 for _ in range(n)]
    dims = ",".join(str(d) for d in shape)
    with open(os.path.join(work, "json.body"), "w") as f:
        f.write('{"inputs":[{"name":"%s","datatype":"FP32","shape":[%s],"data":[%s]}]}'
                % (name, dims, ",".join("%.7g" % v for v in x)))
    header = ('{"inputs":[{"name":"%s","datatype":"FP32","shape":[%s],"parameters":{"binary_data_size":%d}}],'
              '"outputs":[{"name":"%s","parameters":{"binary_data":true}}]}' % (name, dims, 4 * n, out_name))
    with open(os.path.join(work, "binary.body"), "wb") as f:
        f.write(header.encode() + struct.pack("<%df" % n, *x))
    for kind, ctype, extra in (("json", "application/json", ""),
                               ("binary", "application/octet-stream",
                                'wrk.headers["Inference-Header-Content-Length"] = "%d"\n' % len(header))):
        with open(os.path.join(work, kind + ".lua"), "w") as f:
            f.write('wrk.method = "POST"\nlocal f = assert(io.open("%s", "rb"))\nwrk.body = f:read("*a")\n'
                    'f:close()\nwrk.headers["Content-Type"] = "%s"\n%s'
                    'done = function(s, latency, requests)\n'
                    '  io.write(string.format("BENCH %%d %%d %%d %%d %%d\\n", s.requests, s.duration,\n'
                    '    latency:percentile(50), latency:percentile(99),\n'
                    '    s.errors.connect + s.errors.read + s.errors.write + s.errors.status + s.errors.timeout))\n'
                    'end\n' % (os.path.join(work, kind + ".body"), ctype, extra))


def start(work, i, spec):
    name, rest = spec.split("=", 1)
    argv = rest.split(",")
    port_file = os.path.join(work, "port%d" % i)
    p = subprocess.Popen([argv[0], "--model-repository", os.path.join(work, "repo"), "--http-port", "0",
                          "--port-file", port_file, "--http-threads", "2", "--log-level", "warn"] + argv[1:],
                         stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(port_file) and open(port_file).read().strip():
            time.sleep(0.3)   # the model loads after the port is bound
            return name, p, int(open(port_file).read())
        if p.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit("ab_server: %s did not start" % argv[0])


def stats(port, model):
    with urllib.request.urlopen("http://127.0.0.1:%d/v2/models/%s/stats" % (port, model)) as r:
        s = json.load(r)["model_stats"][0]["inference_stats"]
    return s["success"]["count"], s["success"]["ns"], s["compute_infer"]["ns"]


def cpu_ns(pid):
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass   # a thread that ended meanwhile
    return total


def wrk(work, port, model, kind, conns, seconds):
    out = subprocess.run(["wrk", "-t", str(min(conns, 2)), "-c", str(conns), "-d", "%ds" % seconds,
                          "--timeout", "10s", "-s", os.path.join(work, kind + ".lua"),
                          "http://127.0.0.1:%d/v2/models/%s/infer" % (port, model)],
                         capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("BENCH "))
    reqs, us, p50, p99, errors = map(int, line.split()[1:])
    return reqs / (us / 1e6), p50, p99, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=2)
    ap.add_argument("--model", default="lenet5")
    ap.add_argument("--cases", default="binary:1 json:64 binary:64")
    ap.add_argument("daemons", nargs="+", metavar="NAME=INFERD[,FLAG,...]")
    a = ap.parse_args()
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in a.cases.split()]
    work = tempfile.mkdtemp(prefix="inferd-ab-")
    daemons = []
    try:
        model_dir = os.path.join("model_repository", a.model)
        shutil.copytree(model_dir, os.path.join(work, "repo", a.model))   # links out of the repository are refused
        write_payloads(work, model_dir)
        daemons = [start(work, i, spec) for i, spec in enumerate(a.daemons)]
        print("load average %s" % " ".join(open("/proc/loadavg").read().split()[:3]), flush=True)
        for _, _, port in daemons:
            for kind, conns in cases:
                wrk(work, port, a.model, kind, conns, 1)   # warm-up
        res = {}
        for r in range(a.rounds):
            order = daemons if r % 2 == 0 else daemons[::-1]
            for kind, conns in cases:
                for name, p, port in order:
                    s0, c0 = stats(port, a.model), cpu_ns(p.pid)
                    rps, p50, p99, errors = wrk(work, port, a.model, kind, conns, a.duration)
                    c1, s1 = cpu_ns(p.pid), stats(port, a.model)
                    n = max(1, s1[0] - s0[0])
                    own = ((s1[1] - s0[1]) - (s1[2] - s0[2])) / n / 1e3
                    res.setdefault((kind, conns, name), []).append((rps, p50, p99, own, (c1 - c0) / n / 1e3, errors))
            print("round %d/%d, load average %s" % (r + 1, a.rounds, open("/proc/loadavg").read().split()[0]),
                  flush=True)
        print("| case | build | req/s | p50 us | p99 us | server time us | CPU us/request | req/s of each round |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
        for kind, conns in cases:
            for name, _, _ in daemons:
                v = res[(kind, conns, name)]
                med = [statistics.median(x[i] for x in v) for i in range(5)]
                print("| %s, %d conn | %s | %.0f | %.0f | %.0f | %.1f | %.1f | %s |%s"
                      % (kind, conns, name, med[0], med[1], med[2], med[3], med[4],
                         " ".join("%.0f" % x[0] for x in v), " errors" if sum(x[5] for x in v) else ""))
        print("load average %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    finally:
        for _, p, _ in daemons:
            p.terminate()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
