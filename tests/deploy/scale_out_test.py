#!/usr/bin/python3
"""scale_out_test.py - inferd replicas behind nginx, with failures, on loopback.

What docker compose --profile scale runs, without Docker: REPLICAS build/inferd
processes on free 127.0.0.1 ports, nginx (Debian's package, unprivileged, its
configuration in a temporary folder) as the load balancer with the retry and
passive health-check settings of deploy/nginx/, and build/inferd-loadgen
sending classify requests through nginx for DURATION seconds. Under that load
one replica is killed with SIGKILL (a crash), and later another is stopped
with SIGTERM (inferd's drain, as on a rolling update or docker compose stop).

Passes when:
  - the load generator saw no failed request (every answer 200), and nginx
    returned no error to any client;
  - nginx did retry on another replica (the failures were real, and hidden);
  - traffic spread over the replicas: each served at least MIN_SHARE of the
    requests (nginx's access log), and the replicas' own /metrics counters
    (nv_inference_request_success) agree;
  - the drained replica exited 0, and no process outlives the test.

Standard library only; run from the repository root:
  /usr/bin/python3 tests/deploy/scale_out_test.py [--duration 10] [--replicas 3] [--json FILE]
Every process it starts is killed when it ends, fails or is interrupted.
"""
import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NGINX_DIR = os.path.join(ROOT, "deploy", "nginx")
NOBODY = 65534
MODEL = "lenet5"

_children = []


def _die_with_parent():
    """Runs in each child before exec: SIGKILL when this test dies, whatever
    kills it (a time-out's SIGKILL included)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def spawn(args, log_path, demote=False, group=False):
    def pre():
        if demote:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        _die_with_parent()   # after setuid, which clears it
    log = open(log_path, "wb")
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         preexec_fn=pre, cwd=ROOT, start_new_session=group)
    p.own_group = group
    log.close()
    _children.append(p)
    return p


def kill_all():
    for p in _children:
        try:
            if p.own_group:
                os.killpg(p.pid, signal.SIGKILL)   # and anything it forked
            elif p.poll() is None:
                p.kill()
        except OSError:
            pass
    for p in _children:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def processes_naming(*paths):
    """Processes whose command line names one of the paths (strays)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read().decode("utf-8", "replace")
        except OSError:
            continue
        if any(p in cmd for p in paths):
            found.append(int(pid))
    return found


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=2.0):
    """(status, body) of GET http://127.0.0.1:port/path; status 0 when no answer."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return 0, ""


def wait_until(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise RuntimeError("timed out after %g s waiting for %s" % (timeout, what))


def success_count(port):
    """nv_inference_request_success of the model on one replica, or None."""
    status, text = http_get(port, "/metrics")
    if status != 200:
        return None
    m = re.search(r'^nv_inference_request_success\{[^}]*model="%s"[^}]*\}\s+([0-9.e+]+)' % re.escape(MODEL),
                  text, re.M)
    return int(float(m.group(1))) if m else None


def upstream_settings():
    """The upstream server parameters and keepalive of deploy/nginx/nginx.conf,
    so that this test runs what compose deploys."""
    conf = open(os.path.join(NGINX_DIR, "nginx.conf")).read()
    m = re.search(r"^\s*server\s+inferd-replica:8000\s*([^;]*);", conf, re.M)
    k = re.search(r"^\s*keepalive\s+(\d+)\s*;", conf, re.M)
    if not m or not k:
        raise RuntimeError("deploy/nginx/nginx.conf: no 'server inferd-replica:8000 ...;' or 'keepalive N;'")
    return m.group(1).strip(), int(k.group(1))


class Replica:
    def __init__(self, i, build, repo, tmp):
        self.name = "r%d" % i
        self.port_file = os.path.join(tmp, self.name + ".port")
        self.log = os.path.join(tmp, self.name + ".log")
        self.proc = spawn([os.path.join(build, "inferd"), "--model-repository", repo,
                           "--host", "127.0.0.1", "--http-port", "0", "--port-file", self.port_file,
                           "--backend", "cpu", "--threads", "1", "--http-threads", "2",
                           "--drain-timeout", "10", "--log-level", "warn"], self.log)
        self.port = 0
        self.fate = "running"

    def wait_ready(self, timeout):
        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s at start:\n%s" % (self.name, self.proc.returncode, tail(self.log)))
            if not self.port:
                try:
                    self.port = int(open(self.port_file).read().strip() or 0)
                except (OSError, ValueError):
                    return False
            return self.port and http_get(self.port, "/v2/health/ready")[0] == 200
        wait_until(ready, timeout, self.name + " ready")


def tail(path, n=20):
    try:
        return "".join(open(path, errors="replace").readlines()[-n:])
    except OSError:
        return "(no log)"


def write_nginx_conf(ndir, lb_port, replicas, params, keepalive):
    servers = "".join("        server 127.0.0.1:%d %s;\n" % (r.port, params) for r in replicas)
    conf = """# written by tests/deploy/scale_out_test.py
daemon off;
# One process: nothing outlives it when the test kills it.
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    log_format upstream '$status|$upstream_addr|$upstream_status|$request_uri';
    access_log {d}/access.log upstream;
    upstream inferd {{
{servers}        keepalive {keepalive};
    }}
    server {{
        listen 127.0.0.1:{port};
        include {d}/inferd-proxy.conf;
    }}
}}
""".format(d=ndir, servers=servers, keepalive=keepalive, port=lb_port)
    with open(os.path.join(ndir, "nginx.conf"), "w") as f:
        f.write(conf)
    shutil.copy(os.path.join(NGINX_DIR, "inferd-proxy.conf"), os.path.join(ndir, "inferd-proxy.conf"))


def read_access_log(path, addr_to_name):
    """Per-replica 200 answers (the replica that answered last), statuses
    returned to clients, and requests nginx tried on more than one replica."""
    served, statuses, retried, upstream_failures = {}, {}, 0, {}
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("|")
            if len(parts) != 4 or not parts[3].startswith("/v2/models/"):
                continue
            status, addrs, ups, _ = parts
            statuses[status] = statuses.get(status, 0) + 1
            tried = [a for a in re.split(r",\s*", addrs) if a.strip()]
            codes = [c for c in re.split(r",\s*", ups) if c.strip()]
            if len(tried) > 1:
                retried += 1
                for a, c in zip(tried[:-1], codes[:-1]):
                    key = "%s:%s" % (addr_to_name.get(a.strip(), a.strip()), c.strip())
                    upstream_failures[key] = upstream_failures.get(key, 0) + 1
            if status == "200" and tried:
                n = addr_to_name.get(tried[-1].strip(), tried[-1].strip())
                served[n] = served.get(n, 0) + 1
    return served, statuses, retried, upstream_failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="folder of inferd and inferd-loadgen")
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10.0, help="measured seconds of load")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--kill-at", type=float, default=0.4, help="SIGKILL replica r0 at this fraction of the run")
    ap.add_argument("--term-at", type=float, default=0.7,
                    help="SIGTERM replica r1 at this fraction of the run (0: no drain)")
    ap.add_argument("--min-share", type=float, default=0.05, help="least share of requests each replica serves")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (logs)")
    a = ap.parse_args()
    if a.replicas < (3 if a.term_at > 0 else 2):
        ap.error("need a replica to kill, one to drain (unless --term-at 0) and one left serving")
    for prog in ("inferd", "inferd-loadgen"):
        if not os.access(os.path.join(a.build, prog), os.X_OK):
            print("scale-out: %s/%s is missing (make all)" % (a.build, prog))
            return 1
    if not os.access(a.nginx, os.X_OK):
        print("scale-out: nginx is missing (apt-get install nginx, or make test-deploy)")
        return 1

    tmp = tempfile.mkdtemp(prefix="inferd-scale-")
    # nginx's own folder: readable and writable by the unprivileged user it runs as.
    ndir = tempfile.mkdtemp(prefix="inferd-scale-nginx-")
    os.chmod(ndir, 0o755)
    demote = os.getuid() == 0
    if demote:
        os.chown(ndir, NOBODY, NOBODY)
    ok = False
    t_start = time.monotonic()
    try:
        repo = os.path.join(tmp, "repo")
        shutil.copytree(os.path.join(ROOT, "model_repository", MODEL), os.path.join(repo, MODEL))
        replicas = [Replica(i, a.build, repo, tmp) for i in range(a.replicas)]
        for r in replicas:
            r.wait_ready(60)
        params, keepalive = upstream_settings()
        lb_port = free_port()
        write_nginx_conf(ndir, lb_port, replicas, params, keepalive)
        if demote:
            for f in os.listdir(ndir):
                os.chown(os.path.join(ndir, f), NOBODY, NOBODY)
        nginx = spawn([a.nginx, "-p", ndir + "/", "-c", os.path.join(ndir, "nginx.conf"),
                       "-e", os.path.join(ndir, "error.log")], os.path.join(tmp, "nginx.out"), demote, group=True)

        def lb_up():
            if nginx.poll() is not None:
                raise RuntimeError("nginx exited with %s:\n%s\n%s" % (nginx.returncode, tail(os.path.join(tmp, "nginx.out")),
                                                                     tail(os.path.join(ndir, "error.log"))))
            return http_get(lb_port, "/lb/health")[0] == 200
        wait_until(lb_up, 15, "nginx")
        if http_get(lb_port, "/v2/models/%s/ready" % MODEL)[0] != 200:
            raise RuntimeError("the model is not ready through nginx")
        print("scale-out: %d inferd replicas (ports %s) behind nginx on 127.0.0.1:%d (%s)"
              % (len(replicas), ", ".join(str(r.port) for r in replicas), lb_port,
                 "running as nobody" if demote else "unprivileged user"))
        print("scale-out: upstream server parameters from deploy/nginx/nginx.conf: %s; keepalive %d"
              % (params, keepalive))

        warmup = 1.0
        lg_out = os.path.join(tmp, "loadgen")
        lg = spawn([os.path.join(a.build, "inferd-loadgen"), "--url", "http://127.0.0.1:%d" % lb_port,
                    "--model", MODEL, "--kind", "classify", "--concurrency", str(a.concurrency),
                    "--duration", "%g" % a.duration, "--warmup", "%g" % warmup, "--timeout", "15",
                    "--no-progress", "--out", lg_out], os.path.join(tmp, "loadgen.log"))
        t0 = time.monotonic()
        # The load generator prepares its requests (well under a second), warms
        # up, then measures: the events fall inside the measured window.
        prep = 0.5
        events = [(a.kill_at, "kill", replicas[0])]
        if a.term_at > 0:
            events.append((a.term_at, "term", replicas[1]))
        snapshots = {}
        for frac, what, r in sorted(events, key=lambda e: e[0]):
            delay = t0 + prep + warmup + frac * a.duration - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if lg.poll() is not None:
                raise RuntimeError("inferd-loadgen ended early (%s):\n%s" % (lg.returncode, tail(os.path.join(tmp, "loadgen.log"))))
            snapshots[what] = {x.name: success_count(x.port) for x in replicas if x.fate == "running"}
            if what == "kill":
                r.proc.send_signal(signal.SIGKILL)
                r.fate = "killed"
            else:
                r.proc.send_signal(signal.SIGTERM)
                r.fate = "drained"
            print("scale-out: %.1f s into the load: %s %s (served so far: %s)"
                  % (time.monotonic() - t0, "SIGKILL" if what == "kill" else "SIGTERM", r.name,
                     ", ".join("%s %s" % kv for kv in snapshots[what].items())))
        try:
            lg.wait(timeout=a.duration + warmup + 60)
        except subprocess.TimeoutExpired:
            raise RuntimeError("inferd-loadgen did not finish")
        final = {x.name: success_count(x.port) for x in replicas if x.fate == "running"}
        drained_status = None
        if a.term_at > 0:
            try:
                drained_status = replicas[1].proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                drained_status = "still running 15 s after the load"
        killed_status = replicas[0].proc.wait(timeout=5)

        # ---------------------------------------------------------- figures
        try:
            report = json.load(open(lg_out + ".json"))
            level = report["levels"][0]
        except (OSError, ValueError, KeyError, IndexError):
            raise RuntimeError("no report from inferd-loadgen (status %s):\n%s"
                               % (lg.returncode, tail(os.path.join(tmp, "loadgen.log"))))
        addr_to_name = {"127.0.0.1:%d" % r.port: r.name for r in replicas}
        served, statuses, retried, upstream_failures = read_access_log(os.path.join(ndir, "access.log"), addr_to_name)
        total_served = sum(served.values())
        # What each replica's own counter says: the killed one up to its
        # death (last scrape), the drained one up to its drain, the rest at the end.
        metric = {}
        for r in replicas:
            if r.fate == "killed":
                metric[r.name] = snapshots["kill"].get(r.name)
            elif r.fate == "drained":
                metric[r.name] = snapshots["term"].get(r.name)
            else:
                metric[r.name] = final.get(r.name)

        lat = level.get("latency_ms", {})
        figures = {
            "replicas": len(replicas), "duration_s": a.duration, "concurrency": a.concurrency,
            "loadgen": {k: level.get(k) for k in ("sent", "completed", "ok", "errors", "throughput_rps",
                                                  "status_counts", "errors_by_status")},
            "latency_ms": lat,
            "loadgen_exit_status": lg.returncode,
            "nginx_statuses_to_clients": statuses,
            "nginx_retried_requests": retried,
            "nginx_failed_attempts_by_replica_and_status": upstream_failures,
            "served_by_replica_access_log": served,
            "nv_inference_request_success_by_replica": metric,
            "success_counts_at_kill": snapshots.get("kill"),
            "success_counts_at_term": snapshots.get("term"),
            "success_counts_at_end": final,
            "killed": {"replica": replicas[0].name, "exit": killed_status},
            "drained": {"replica": replicas[1].name, "exit": drained_status} if a.term_at > 0 else None,
        }
        print("scale-out: loadgen %s sent, %s answered, %s ok, %s errors; %.0f req/s; latency ms p50 %s p99 %s max %s"
              % (level.get("sent"), level.get("completed"), level.get("ok"), level.get("errors"),
                 level.get("throughput_rps") or 0, lat.get("p50"), lat.get("p99"), lat.get("max")))
        print("scale-out: nginx answered clients %s; %d request(s) retried on another replica; failed attempts %s"
              % (statuses, retried, upstream_failures or "none"))
        print("scale-out: served per replica (nginx log, warm-up included): %s"
              % ", ".join("%s %d (%.1f%%)" % (n, c, 100.0 * c / max(total_served, 1)) for n, c in sorted(served.items())))
        print("scale-out: nv_inference_request_success per replica: %s"
              % ", ".join("%s %s" % kv for kv in sorted(metric.items())))
        print("scale-out: %s exit %s (SIGKILL)%s" % (replicas[0].name, killed_status,
              "; %s exit %s (SIGTERM drain)" % (replicas[1].name, drained_status) if a.term_at > 0 else ""))

        # ---------------------------------------------------------- verdict
        problems = []
        if lg.returncode != 0:
            problems.append("inferd-loadgen exited %s" % lg.returncode)
        if not level.get("completed"):
            problems.append("no request was answered")
        if level.get("errors") or level.get("ok") != level.get("completed") or level.get("sent") != level.get("completed"):
            problems.append("failed or unanswered requests: %s sent, %s answered, %s ok"
                            % (level.get("sent"), level.get("completed"), level.get("ok")))
        warm = level.get("warmup") or {}
        if warm.get("ok") != warm.get("completed"):
            problems.append("failed requests in the warm-up: %s" % warm)
        if set(statuses) != {"200"}:
            problems.append("nginx returned non-200 answers to clients: %s" % statuses)
        if retried < 1:
            problems.append("nginx retried no request: the failures went unnoticed, so nothing was tested")
        for r in replicas:
            share = served.get(r.name, 0) / max(total_served, 1)
            if share < a.min_share:
                problems.append("%s served %.1f%% of the requests (< %.0f%%)" % (r.name, 100 * share, 100 * a.min_share))
            if not metric.get(r.name):
                problems.append("%s's /metrics show no successful request" % r.name)
        for r in replicas:
            if r.fate == "running":
                before = snapshots["kill"].get(r.name) or 0
                if (final.get(r.name) or 0) <= before:
                    problems.append("%s served nothing after the kill" % r.name)
        if killed_status != -signal.SIGKILL:
            problems.append("the killed replica ended with %s" % killed_status)
        if a.term_at > 0 and drained_status != 0:
            problems.append("the drained replica ended with %s (want 0):\n%s" % (drained_status, tail(replicas[1].log)))
        figures["problems"] = problems
        if a.json:
            with open(a.json, "w") as f:
                json.dump(figures, f, indent=2)
        for p in problems:
            print("scale-out: FAIL: " + p)
        ok = not problems
    except RuntimeError as e:
        print("scale-out: FAIL: %s" % e)
    finally:
        kill_all()
        leftover = [p.pid for p in _children if p.poll() is None] + processes_naming(tmp, ndir)
        if leftover:
            print("scale-out: FAIL: processes still running: %s" % leftover)
            ok = False
        if a.keep or not ok:
            print("scale-out: logs in %s and %s" % (tmp, ndir))
        if not a.keep and ok:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(ndir, ignore_errors=True)
    print("scale-out: %s in %.1f s" % ("passed" if ok else "FAILED", time.monotonic() - t_start))
    return 0 if ok else 1


if __name__ == "__main__":
    # An interrupt or a SIGTERM (make's time-out) still runs the clean-up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
