#!/usr/bin/python3
"""test_readme.py - runs every ```sh block of README.md as written (make test-readme).

  /usr/bin/python3 tests/readme/test_readme.py [--build DIR] [NAME_SUBSTRING...]

Each block runs under bash -e -o pipefail in a scratch copy of the checkout
(modification times kept; build/ linked to the real one, which must be
built), so nothing a command writes (model_repository/fashion-onnx, my_photos,
req.bin, ...) lands in the repository. A block is one check,
named after its first command; its exit status must be 0 and its output
must match what BLOCKS says.

What the test changes, printed with each block:
  - the server. A block that talks to one gets `make run PORT=P` started
    (in its own process group) before it and stopped after it; a `make run`
    line inside a block is where that happens. P is 8000 when free, else a
    free port, and then localhost:8000 / 127.0.0.1:8000 in the commands
    become P, INFERD_URL points inferctl at it, and inferd-loadgen lines get
    --url;
  - lines and blocks that cannot run here (SKIP_LINES, SKIP_BLOCKS: Docker,
    a cluster, Helm, another host) are removed and printed as skipped with
    the reason, never counted as passed.

Ends with "N passed, N failed, N skipped"; exits 1 when a block failed.
"""
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
README = os.path.join(ROOT, "README.md")

# Blocks, by their first command: whether the test provides a server, and
# regular expressions the output must match (all of them).
BLOCKS = {
    "make run": (False, [r"inferd: listening|ready"]),
    "build/inferctl run model_repository/lenet5": (False, [
        r"Ankle boot \(9\)", r"accuracy|top-1", r"(?i)int8", r"fp16|FP16", r"(?s)conv.*%"]),
    "cd clients/examples/images": (True, [
        r'"label":\s*"Ankle boot"', r'"label":\s*"Bag"', r'"outputs"', r"HTTP/1.1 200",
        r"nv_inference_request_success\{model=\"lenet5\""]),
    "build/inferctl health": (True, [r"lenet5", r"Ankle boot", r"Bag"]),
    "build/inferd-loadgen --model lenet5": (True, [r"(?i)throughput|req/s", r"p99"]),
    "build/inferctl profile model_repository/resnet-mini": (False, [r"(?i)p99|frontier", r"(?s)conv.*%"]),
    "make deps-python": (False, [r"Ankle boot"]),
}
SKIP_BLOCKS = {
    "docker build": "needs a Docker engine (make test-deploy checks the Dockerfile without one)",
    "docker compose up -d": "needs a Docker engine (make test-deploy checks docker-compose.yml without one)",
    "kubectl apply": "needs a Kubernetes cluster (make test-deploy validates deploy/k8s/)",
    "helm install": "needs the helm command and a cluster (make test-deploy lints and renders the chart)",
}
SKIP_LINES = {
    "make test ": "the whole test suite: .ci/run runs it before this test",
    "--url http://gpu-box:8000": "talks to another host (gpu-box), which needs --enable-model-control",
}
SERVER_READY_S = 180


class Fail(Exception):
    pass


def sh_blocks(text):
    return [m.group(1) for m in re.finditer(r"^```sh\n(.*?)^```$", text, re.M | re.S)]


def first_command(block):
    for line in block.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    return ""


def free_port():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as inferd binds
    try:
        s.bind(("127.0.0.1", 8000))
        s.close()
        return 8000
    except OSError:
        s.close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ready(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/v2/health/ready" % port, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


class Server:
    """`make run PORT=P` in the scratch folder, in its own process group."""

    def __init__(self, cwd, port, log):
        self.port = port
        self.p = subprocess.Popen(["make", "--no-print-directory", "run", "PORT=%d" % port], cwd=cwd,
                                  stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
        deadline = time.monotonic() + SERVER_READY_S
        while not ready(port):
            if self.p.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise Fail("make run PORT=%d did not become ready (log above)" % port)
            time.sleep(0.1)

    def stop(self):
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()


def scratch_checkout(build):
    """A copy of the checkout (modification times kept, so make finds the
    build up to date) whose build/ is the real one, linked."""
    tmp = tempfile.mkdtemp(prefix="inferd-readme-")
    skip = {".git", "build", "build-asan", "build-fuzz", ".bundle"}
    for name in os.listdir(ROOT):
        src, dst = os.path.join(ROOT, name), os.path.join(tmp, name)
        if name in skip or name.startswith("build"):
            continue
        if os.path.isdir(src):
            shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "artifacts"))
        else:
            shutil.copy2(src, dst)
    os.symlink(os.path.abspath(os.path.join(ROOT, build)), os.path.join(tmp, "build"))
    return tmp


def localise(script, port):
    """The block with skipped lines removed and the port substituted; (script, notes)."""
    notes, out = [], []
    for line in script.splitlines():
        why = next((w for k, w in SKIP_LINES.items() if line.startswith(k) or (k.startswith("--") and k in line)), None)
        if why:
            notes.append("skipped: %s (%s)" % (line.strip(), why))
            continue
        if port != 8000:
            line = line.replace("localhost:8000", "localhost:%d" % port).replace("127.0.0.1:8000", "127.0.0.1:%d" % port)
            if line.startswith("build/inferd-loadgen "):
                line = line.split("#")[0].rstrip() + " --url http://127.0.0.1:%d" % port
        out.append(line)
    if port != 8000:
        notes.append("port 8000 is busy: the server and the commands use %d" % port)
    return "\n".join(out) + "\n", notes


def run_block(name, block, build):
    needs_server, expect = BLOCKS[name]
    cwd = scratch_checkout(build)
    port = free_port()
    script, notes = localise(block, port)
    for n in notes:
        print("  " + n)
    # Split at a `make run` line: what precedes runs first, then the server
    # starts, then the rest runs against it.
    lines = script.splitlines(keepends=True)
    at = next((i for i, l in enumerate(lines) if re.match(r"make run(\s|$)", l)), None)
    parts = [script] if at is None else ["".join(lines[:at]), "".join(lines[at + 1:])]
    env = dict(os.environ, INFERD_URL="http://127.0.0.1:%d" % port)
    log = tempfile.TemporaryFile()
    server = None
    output = ""
    try:
        for i, part in enumerate(parts):
            if (i == 1 or (needs_server and at is None)) and server is None:
                print("  make run PORT=%d: started, ready" % port if i == 1 else
                      "  the server for this block: make run PORT=%d, ready" % port)
                server = Server(cwd, port, log)
            if not part.strip():
                continue
            p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", part], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               timeout=600)
            text = p.stdout.decode("utf-8", "replace")
            output += text
            if p.returncode != 0:
                raise Fail("exit %d after:\n%s" % (p.returncode, text[-3000:]))
        if server and server.p.poll() is not None:
            raise Fail("the server exited during the block")
        missing = [e for e in expect if not re.search(e, output + server_log(log))]
        if missing:
            raise Fail("output lacks %s:\n%s" % (missing, output[-3000:]))
        print("  exit 0; output matches %s" % ", ".join(expect))
    finally:
        if server:
            server.stop()
            print("  server stopped (exit %s)" % server.p.returncode)
        log.close()
        shutil.rmtree(cwd, ignore_errors=True)


def server_log(log):
    log.flush()
    log.seek(0)
    return log.read().decode("utf-8", "replace")


def main(argv):
    sys.stdout.reconfigure(line_buffering=True)
    build = "build"
    if "--build" in argv:
        build = argv[argv.index("--build") + 1]
        argv = [a for a in argv if a not in ("--build", build)]
    filters = [a for a in argv if not a.startswith("-")]
    passed = failed = skipped = 0
    seen = set()
    for block in sh_blocks(open(README).read()):
        first = first_command(block)
        name = next((k for k in list(BLOCKS) + list(SKIP_BLOCKS) if first.startswith(k)), None)
        if filters and not any(f in first for f in filters):
            continue
        print("readme: " + first)
        t0 = time.monotonic()
        if name is None:
            print("  FAIL: a README block the test does not know: add it to BLOCKS or SKIP_BLOCKS")
            failed += 1
        elif name in SKIP_BLOCKS:
            print("  skipped: %s" % SKIP_BLOCKS[name])
            skipped += 1
            seen.add(name)
            continue
        else:
            seen.add(name)
            try:
                run_block(name, block, build)
                passed += 1
                print("  ok (%.0f ms)" % ((time.monotonic() - t0) * 1000))
                continue
            except (Fail, subprocess.TimeoutExpired) as e:
                print("  FAIL: %s" % e)
                failed += 1
        print("  FAILED (%.0f ms)" % ((time.monotonic() - t0) * 1000))
    if not filters:
        for k in set(BLOCKS) | set(SKIP_BLOCKS):
            if k not in seen:
                print("readme: no block starts with %r any more: update tests/readme/test_readme.py" % k)
                failed += 1
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main(sys.argv[1:]))
