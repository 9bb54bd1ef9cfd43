#!/usr/bin/env python3
"""test_deploy.py - the deployment checks that run without Docker (make test-deploy).

Runs with the Python of build/deploy-venv (PyYAML, jsonschema,
kubernetes-validate, hadolint, helm-python-sdk from PyPI; see test-deploy in mk/deploy.mk),
from the repository root:

  build/deploy-venv/bin/python tests/deploy/test_deploy.py [NAME_SUBSTRING...]

Checks, each printed as the test runner prints its tests:
  compose_config       docker-compose (Debian's, v1.29) parses and resolves docker-compose.yml
                       with every profile; the resolved services have what the deployment needs
  dockerfile_lint      hadolint on the Dockerfile (deploy/hadolint.yaml)
  dockerfile_structure stages, base images against the CUDA toolkit and cuDNN here, users,
                       ports, health check, commands, the build packages (DEBS, mk/deps.mk)
  cuda_driver_floor    the GPU image's CUDA runs on an R535 driver: its major's driver floor, the
                       nvcc flags mk/build.mk gives that nvcc (SASS per target, a compression
                       12.x drivers read), README.md naming the tags and the driver
  nginx_config         nginx -t on the compose load balancer's configuration
  k8s_schemas          kubernetes-validate --strict against the bundled API schemas
  k8s_consistency      probes, ports, annotations, drain timings, selectors agree
  kserve_schemas       the KServe resources against the KServe SDK's generated models, with
                       Kubernetes' schemas for the embedded core types
  kserve_consistency   runtime, protocol, port and model format agree
  helm_lint            Helm's linter (helm-python-sdk, Helm's Go SDK) --strict on deploy/helm/inferd, and
                       its manifests rendered with several values validated like k8s_schemas
  helm_consistency     the chart's defaults render deploy/k8s/'s probes, ports, drain timings, HPA, PDB
  prometheus_config    promtool (Debian's prometheus) on deploy/prometheus/ and the dashboard's PromQL
  dashboard_metrics    every metric the Grafana dashboard and the Prometheus rules read is in a
                       running inferd's /metrics (GPU-only gauges: in server/srv_metrics.c)
  image_build_cpu      the cpu-build stage's commands in a copy of the build context
                       (.dockerignore applied as Docker does), then the image's CMD
  image_build_cuda     the same for the cuda-build stage (compile only; skipped without nvcc)
  commands_run         every inferd command line of the Dockerfile, compose, Kubernetes and
                       KServe files starts build/inferd to ready and drains on SIGTERM
  scale_out            tests/deploy/scale_out_test.py: 3 replicas behind nginx, one SIGKILLed and one
                       drained under load, no failed request

Ends with "N passed, N failed, N skipped"; exits 1 when a check failed.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.chdir(ROOT)
BUILD = os.environ.get("BUILD", "build")
VENV = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
SYSTEM_PYTHON = "/usr/bin/python3"
DOCKER_COMPOSE = shutil.which("docker-compose") or "/usr/bin/docker-compose"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
HADOLINT = shutil.which("hadolint", path=os.path.join(VENV, "bin")) or shutil.which("hadolint")
MODEL = "lenet5"


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def info(msg):
    print("  " + msg)


def run(args, timeout=120, env=None, cwd=None):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                       env=env, cwd=cwd, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def load_yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def arg_value(args, flag):
    """The value of --flag in an argument list (--flag V or --flag=V), or None."""
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return str(args[i + 1])
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def duration_s(v):
    """Compose durations ('35s', '2m', '1m30s') in seconds."""
    if isinstance(v, (int, float)):
        return float(v)
    total = 0.0
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6}
    for num, unit in re.findall(r"([0-9.]+)(ms|us|h|m|s)", str(v)):
        total += float(num) * units[unit]
    return total


# ------------------------------------------------------------------ Dockerfile

def dockerfile():
    """[(stage_name, base, [(INSTRUCTION, text), ...])], the global ARG defaults."""
    lines, buf = [], ""
    for raw in open("Dockerfile"):
        line = raw.rstrip("\n")
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if buf and line.lstrip().startswith("#"):
            continue                      # comments inside a continued instruction
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        lines.append(buf + line)
        buf = ""
    args, stages = {}, []
    for ins in lines:
        word, _, rest = ins.strip().partition(" ")
        word = word.upper()
        rest = rest.strip()
        if word == "ARG" and not stages:
            k, _, v = rest.partition("=")
            args[k] = v
        elif word == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            base = re.sub(r"\$\{(\w+)\}", lambda g: args.get(g.group(1), ""), m.group(1))
            stages.append((m.group(2) or str(len(stages)), base, []))
        elif stages:
            stages[-1][2].append((word, rest))
    return stages, args


def stage(stages, name):
    for s in stages:
        if s[0] == name:
            return s
    raise Fail("Dockerfile: no stage %s" % name)


def instr(st, word):
    return [t for w, t in st[2] if w == word]


def json_instr(st, word):
    v = instr(st, word)
    check(v, "Dockerfile stage %s: no %s" % (st[0], word))
    try:
        return json.loads(v[-1])
    except ValueError:
        raise Fail("Dockerfile stage %s: %s is not in JSON (exec) form" % (st[0], word))


def stage_run_make(st):
    """The build stage's RUN that starts with make: its shell text."""
    runs = [r for r in instr(st, "RUN") if r.startswith("make ")]
    check(len(runs) == 1, "Dockerfile stage %s: want one RUN make ..., found %d" % (st[0], len(runs)))
    return runs[0]


def stage_apt_packages(st):
    pkgs = set()
    for r in instr(st, "RUN"):
        for m in re.finditer(r"apt-get install ([^&;|]*)", r):
            pkgs.update(w for w in m.group(1).split() if not w.startswith("-") and not w.startswith("$"))
    return pkgs


def makefile_debs():
    text = open("mk/deps.mk").read().replace("\\\n", " ")
    m = re.search(r"^DEBS\s*:=\s*(.*)$", text, re.M)
    check(m, "mk/deps.mk: no DEBS := line")
    return m.group(1).split("#")[0].split()


def local_cuda_release():
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    if not nvcc:
        return None
    rc, out = run([nvcc, "--version"])
    m = re.search(r"release (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def local_cudnn_major():
    for h in ("/usr/local/cuda/include/cudnn_version.h", "/usr/include/cudnn_version.h",
              "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h"):
        if os.path.exists(h):
            m = re.search(r"#define CUDNN_MAJOR (\d+)", open(h).read())
            if m:
                return int(m.group(1))
    return None


def t_dockerfile_lint():
    if not HADOLINT:
        raise Fail("hadolint is not installed (make test-deploy installs it from PyPI into %s)" % VENV)
    rc, out = run([HADOLINT, "--version"])
    info(out.strip())
    rc, out = run([HADOLINT, "--no-color", "--config", "deploy/hadolint.yaml", "Dockerfile"])
    check(rc == 0, "hadolint:\n" + out)
    info("no findings (DL3008, version pins for apt packages, ignored: deploy/hadolint.yaml)")


def t_dockerfile_structure():
    stages, args = dockerfile()
    names = [s[0] for s in stages]
    info("stages: " + ", ".join("%s (%s)" % (s[0], s[1]) for s in stages))
    check(names[-1] == "gpu", "the last stage (what docker build builds) should be gpu, is %s" % names[-1])
    cpu_build, cpu, loadgen = stage(stages, "cpu-build"), stage(stages, "cpu"), stage(stages, "loadgen")
    cuda_build, gpu = stage(stages, "cuda-build"), stage(stages, "gpu")
    cv, ub = args.get("CUDA_VERSION", ""), args.get("UBUNTU_VERSION", "")
    check(cuda_build[1] == "nvidia/cuda:%s-cudnn-devel-ubuntu%s" % (cv, ub), "cuda-build base: %s" % cuda_build[1])
    check(gpu[1] == "nvidia/cuda:%s-cudnn-runtime-ubuntu%s" % (cv, ub), "gpu base: %s" % gpu[1])
    check(re.match(r"debian:[a-z]+$", cpu_build[1]), "cpu-build base: %s" % cpu_build[1])
    check(cpu[1] == cpu_build[1] + "-slim", "cpu base %s is not %s-slim" % (cpu[1], cpu_build[1]))
    check(loadgen[1] == "cpu", "loadgen should build on the cpu stage")
    release = local_cuda_release()
    mm = tuple(int(x) for x in cv.split(".")[:2])
    if release:
        # The image's toolkit may be older than the one here (cuda_driver_floor says why);
        # image_build_cuda compiles the stage with the nvcc here.
        check(mm <= release, "CUDA_VERSION %s is newer than nvcc here (%d.%d)" % (cv, *release))
        info("image CUDA %s; nvcc here %d.%d" % (cv, *release))
    else:
        info("no nvcc here: CUDA_VERSION %s not compared" % cv)
    major = local_cudnn_major()
    src = open("runtime/backend/backend_cuda_cudnn.c").read() if os.path.exists("runtime/backend/backend_cuda_cudnn.c") else ""
    m = re.search(r'dlopen\("libcudnn\.so\.(\d+)"', src)
    if m:
        info("inferd opens libcudnn.so.%s; cuDNN here: %s" % (m.group(1), major if major else "not installed"))
        if major:
            check(int(m.group(1)) == major, "cuDNN %d here, inferd opens libcudnn.so.%s" % (major, m.group(1)))
    check("CUDA=0" in stage_run_make(cpu_build), "cpu-build does not make CUDA=0")
    check("CUDA=1" in stage_run_make(cuda_build), "cuda-build does not make CUDA=1")
    # The build packages (DEBS in mk/deps.mk), in each build stage (Debian and Ubuntu names).
    renamed = {"libjpeg62-turbo-dev": "libjpeg-dev"}
    not_for_build = {"dataset-fashion-mnist", "curl", "libonnx-testdata"}
    need = [renamed.get(p, p) for p in makefile_debs() if p not in not_for_build]
    have_cpu, have_cuda = stage_apt_packages(cpu_build), stage_apt_packages(cuda_build)
    # The Ubuntu stage takes onnx.proto from a Debian stage instead of libonnx-dev.
    copies_proto = any("onnx.proto" in c for c in instr(cuda_build, "COPY"))
    missing_cpu = [p for p in need if p not in have_cpu]
    missing_cuda = [p for p in need if p not in have_cuda and not (p == "libonnx-dev" and copies_proto)]
    check(not missing_cpu, "cpu-build lacks DEBS (mk/deps.mk): %s" % missing_cpu)
    check(not missing_cuda, "cuda-build lacks DEBS (mk/deps.mk): %s" % missing_cuda)
    info("build stages install DEBS (mk/deps.mk): %s" % " ".join(need))
    for st in (cpu, gpu, loadgen):
        users = instr(st, "USER") or (instr(cpu, "USER") if st is loadgen else [])
        check(users, "stage %s: no USER" % st[0])
        uid = users[-1].split(":")[0]
        check(uid.isdigit() and int(uid) != 0, "stage %s runs as %s, not a numeric non-root user" % (st[0], users[-1]))
    for st in (cpu, gpu):
        check("8000" in " ".join(instr(st, "EXPOSE")).split(), "stage %s: no EXPOSE 8000" % st[0])
        hc = " ".join(instr(st, "HEALTHCHECK"))
        check("/v2/health/ready" in hc and "8000" in hc, "stage %s: HEALTHCHECK is not on /v2/health/ready:8000" % st[0])
        check(json_instr(st, "ENTRYPOINT") == ["inferd"], "stage %s: ENTRYPOINT is not [\"inferd\"]" % st[0])
        cmd = json_instr(st, "CMD")
        check(arg_value(cmd, "--host") == "0.0.0.0", "stage %s: CMD lacks --host 0.0.0.0" % st[0])
        check(arg_value(cmd, "--http-port") == "8000", "stage %s: CMD lacks --http-port 8000" % st[0])
        check(arg_value(cmd, "--model-repository") == "/models", "stage %s: CMD does not serve /models" % st[0])
        check(any(re.search(r"model_repository\s+/models$", c) for c in instr(st, "COPY")),
              "stage %s: the shipped models are not copied to /models" % st[0])
        copied = " ".join(instr(st, "COPY"))
        for prog in ("inferd", "inferctl", "inferd-loadgen"):
            check("build/%s" % prog in copied, "stage %s: %s is not copied" % (st[0], prog))
    check(json_instr(loadgen, "ENTRYPOINT") == ["inferd-loadgen"], "loadgen: ENTRYPOINT")
    check("NONE" in " ".join(instr(loadgen, "HEALTHCHECK")), "loadgen inherits the server's HEALTHCHECK")
    check("dataset-fashion-mnist" in stage_apt_packages(loadgen), "loadgen: no Fashion-MNIST test set")
    ign = open(".dockerignore").read()
    check(re.search(r"^\*$", ign, re.M), ".dockerignore is not an allow-list starting with *")


# ------------------------------------------------------------------ compose

def compose_config(profiles=(), env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFERD_", "LOADGEN_", "COMPOSE_"))}
    env.update(env_extra or {})
    args = [DOCKER_COMPOSE, "-f", "docker-compose.yml"]
    for p in profiles:
        args += ["--profile", p]
    rc, out = run(args + ["config"], env=env)
    check(rc == 0, "docker-compose config%s:\n%s" % ("".join(" --profile " + p for p in profiles), out))
    return yaml.safe_load(out)


def t_compose_config():
    if not os.access(DOCKER_COMPOSE, os.X_OK):
        raise Fail("docker-compose is not installed (apt-get install docker-compose; make test-deploy does)")
    rc, out = run([DOCKER_COMPOSE, "version", "--short"])
    info("docker-compose %s (Debian's package; the compose-spec schema it carries validates the file)" % out.strip())
    rc, out = run([DOCKER_COMPOSE, "-f", "docker-compose.yml", "config", "-q"])
    check(rc == 0, "docker-compose config -q:\n" + out)
    # (docker-compose v1's config lists every service whatever the profiles;
    # the profiles themselves are checked below.)
    cfg = compose_config(("cpu", "scale", "loadgen"))
    sv = cfg["services"]
    check(set(sv) == {"inferd", "inferd-cpu", "inferd-replica", "lb", "loadgen"}, "services: %s" % sorted(sv))
    expect_profiles = {"inferd-cpu": ["cpu"], "inferd-replica": ["scale"], "lb": ["scale"], "loadgen": ["loadgen"]}
    for name, prof in expect_profiles.items():
        check(sv[name].get("profiles") == prof, "%s: profiles %s, want %s" % (name, sv[name].get("profiles"), prof))
    for name in ("inferd", "inferd-cpu", "inferd-replica"):
        s = sv[name]
        gpu = name != "inferd-cpu"
        check(s["build"]["target"] == ("gpu" if gpu else "cpu"), "%s: build target %s" % (name, s["build"]["target"]))
        devices = s.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
        if gpu:
            check(devices and "gpu" in devices[0].get("capabilities", []) and devices[0].get("driver") == "nvidia",
                  "%s: no nvidia device reservation with the gpu capability" % name)
            check(isinstance(devices[0].get("count"), int) or devices[0].get("count") == "all",
                  "%s: device count %r is not a number or all" % (name, devices[0].get("count")))
        else:
            check(not devices, "%s reserves a GPU" % name)
        hc = s.get("healthcheck", {})
        check("/v2/health/ready" in " ".join(hc.get("test", [])), "%s: healthcheck not on /v2/health/ready" % name)
        check(s.get("restart") in ("always", "unless-stopped", "on-failure"), "%s: restart %s" % (name, s.get("restart")))
        cmd = [str(c) for c in s["command"]]
        repo = arg_value(cmd, "--model-repository")
        check(any(v.get("target") == repo and v.get("read_only") for v in s.get("volumes", [])),
              "%s: no read-only volume at the model repository %s" % (name, repo))
        check(arg_value(cmd, "--host") == "0.0.0.0", "%s: --host is not 0.0.0.0" % name)
        check(arg_value(cmd, "--backend") == ("cuda" if gpu else "cpu"), "%s: --backend" % name)
        drain = float(arg_value(cmd, "--drain-timeout") or 30)
        grace = duration_s(s.get("stop_grace_period", "10s"))
        check(grace > drain, "%s: stop_grace_period %s s is not above --drain-timeout %s s" % (name, grace, drain))
        port = arg_value(cmd, "--http-port")
        check(("127.0.0.1:%s/" % port) in " ".join(hc.get("test", [])), "%s: healthcheck port is not %s" % (name, port))
    check(isinstance(sv["inferd-replica"]["deploy"].get("replicas"), int) and sv["inferd-replica"]["deploy"]["replicas"] >= 2,
          "inferd-replica: replicas %r" % sv["inferd-replica"]["deploy"].get("replicas"))
    check("ports" not in sv["inferd-replica"], "replicas publish ports (only the load balancer should)")
    five = compose_config(("scale",), {"INFERD_REPLICAS": "5"})
    check(five["services"]["inferd-replica"]["deploy"]["replicas"] == 5, "INFERD_REPLICAS=5 is not honoured")
    lb = sv["lb"]
    check(lb.get("depends_on", {}).get("inferd-replica", {}).get("condition") == "service_healthy",
          "lb does not wait for healthy replicas")
    mounts = {v.split(":")[1]: v.split(":")[0] for v in lb.get("volumes", []) if isinstance(v, str)}
    nginx_conf = open("deploy/nginx/nginx.conf").read()
    inc = re.search(r"include\s+(\S+);", nginx_conf).group(1)
    check(inc in mounts and mounts[inc].endswith("deploy/nginx/inferd-proxy.conf"),
          "lb: nginx.conf includes %s, which is not mounted from deploy/nginx/inferd-proxy.conf" % inc)
    check(mounts.get("/etc/nginx/nginx.conf", "").endswith("deploy/nginx/nginx.conf"), "lb: nginx.conf not mounted")
    up = re.search(r"server\s+([\w.-]+):(\d+)\s", nginx_conf)
    check(up and up.group(1) == "inferd-replica" and up.group(2) == arg_value([str(c) for c in sv["inferd-replica"]["command"]], "--http-port"),
          "nginx.conf's upstream does not name inferd-replica on its port")
    listen = re.search(r"listen\s+(\d+);", nginx_conf).group(1)
    check(any(str(p.get("target")) == listen for p in lb.get("ports", [])), "lb does not publish nginx's port %s" % listen)
    lg = [str(c) for c in sv["loadgen"]["command"]]
    check(sv["loadgen"]["build"]["target"] == "loadgen", "loadgen: build target")
    check(arg_value(lg, "--url") == "http://lb:%s" % listen, "loadgen: --url %s" % arg_value(lg, "--url"))
    info("profiles: (none) inferd; cpu inferd-cpu; scale inferd-replica x%d + lb; loadgen loadgen"
         % sv["inferd-replica"]["deploy"]["replicas"])


def t_nginx_config():
    if not os.access(NGINX, os.X_OK):
        raise Fail("nginx is not installed (make test-deploy installs Debian's)")
    tmp = tempfile.mkdtemp(prefix="inferd-nginx-t-")
    try:
        conf = open("deploy/nginx/nginx.conf").read()
        # Here the replica name resolves nowhere, and paths point into the temporary folder.
        conf = conf.replace("inferd-replica:", "127.0.0.1:").replace("/tmp/", tmp + "/")
        conf = conf.replace("/etc/nginx/inferd-proxy.conf", os.path.join(tmp, "inferd-proxy.conf"))
        open(os.path.join(tmp, "nginx.conf"), "w").write(conf)
        shutil.copy("deploy/nginx/inferd-proxy.conf", tmp)
        rc, out = run([NGINX, "-t", "-p", tmp + "/", "-c", os.path.join(tmp, "nginx.conf"), "-e", os.path.join(tmp, "error.log")])
        rc_v, ver = run([NGINX, "-v"])
        check(rc == 0, "nginx -t:\n" + out)
        info("%s: deploy/nginx/nginx.conf + inferd-proxy.conf syntax ok" % ver.strip())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------ Kubernetes

def k8s_docs():
    docs = []
    for path in sorted(glob.glob("deploy/k8s/*.yaml")):
        for d in load_yaml_docs(path):
            docs.append((path, d))
    return docs


def t_k8s_schemas():
    import kubernetes_validate
    from kubernetes_validate import utils as kvu
    versions = kvu.all_versions()
    latest = kvu.latest_version()
    # The newest schemas bundled, and a Kubernetes two years older.
    targets = [latest]
    older = [v for v in versions if kvu.major_minor(v) == "1.30"]
    if older:
        targets.append(kvu.major_minor(older[0]))
    docs = k8s_docs()
    kinds = sorted(d["kind"] for _, d in docs)
    check({"Deployment", "Service", "HorizontalPodAutoscaler"} <= set(kinds), "deploy/k8s lacks a resource: %s" % kinds)
    for path, d in docs:
        for v in targets:
            try:
                kubernetes_validate.validate(d, v, strict=True)
            except Exception as e:  # ValidationError, SchemaNotFoundError
                raise Fail("%s (%s %s) against Kubernetes %s: %s" % (path, d.get("kind"), d.get("metadata", {}).get("name"), v,
                                                                      getattr(e, "message", str(e))))
    from importlib.metadata import version
    info("kubernetes-validate %s, strict (unknown fields rejected): %s valid against Kubernetes %s"
         % (version("kubernetes-validate"), ", ".join(kinds), " and ".join(targets)))


def container_port(c, name_or_num):
    for p in c.get("ports", []):
        if p.get("name") == name_or_num or p.get("containerPort") == name_or_num:
            return p.get("containerPort")
    return None


def probe_target(c, probe):
    p = c.get(probe)
    check(p and "httpGet" in p, "container %s: no httpGet %s" % (c["name"], probe))
    return p["httpGet"]["path"], container_port(c, p["httpGet"]["port"])


def check_server_container(c, where):
    """Probes, port and drain of a container running inferd; returns (port, drain_timeout, prestop_s)."""
    args = [str(a) for a in c.get("args", [])]
    port = int(arg_value(args, "--http-port") or 8000)
    check(container_port(c, port) == port, "%s: no containerPort %d for --http-port" % (where, port))
    check(arg_value(args, "--host") == "0.0.0.0", "%s: --host is not 0.0.0.0" % where)
    check(probe_target(c, "readinessProbe") == ("/v2/health/ready", port), "%s: readinessProbe is not GET /v2/health/ready on %d" % (where, port))
    check(probe_target(c, "livenessProbe") == ("/v2/health/live", port), "%s: livenessProbe is not GET /v2/health/live on %d" % (where, port))
    drain = float(arg_value(args, "--drain-timeout") or 30)
    pre = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    check(len(pre) == 2 and pre[0] == "sleep" and pre[1].isdigit(), "%s: preStop is not a sleep" % where)
    lp = c["livenessProbe"]
    live_window = lp.get("periodSeconds", 10) * lp.get("failureThreshold", 3)
    check(live_window > drain, "%s: liveness gives up after %d s, before the %g s drain ends" % (where, live_window, drain))
    return port, drain, int(pre[1])


def t_k8s_consistency():
    docs = {d["kind"]: d for _, d in k8s_docs()}
    dep, svc, hpa = docs["Deployment"], docs["Service"], docs["HorizontalPodAutoscaler"]
    pod = dep["spec"]["template"]
    c = pod["spec"]["containers"][0]
    port, drain, pre = check_server_container(c, "Deployment")
    check(str(c["resources"].get("limits", {}).get("nvidia.com/gpu", "0")) not in ("0", ""), "Deployment: no nvidia.com/gpu limit")
    ann = pod["metadata"].get("annotations", {})
    check(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == str(port)
          and ann.get("prometheus.io/path") == "/metrics", "Deployment: Prometheus annotations %s" % ann)
    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    check(grace >= pre + drain + 5, "terminationGracePeriodSeconds %d < preStop %d + drain %g + 5" % (grace, pre, drain))
    check(arg_value([str(a) for a in c["args"]], "--backend") == "cuda", "Deployment: --backend is not cuda")
    labels = pod["metadata"]["labels"]
    for what, sel in (("Deployment selector", dep["spec"]["selector"]["matchLabels"]), ("Service selector", svc["spec"]["selector"])):
        check(all(labels.get(k) == v for k, v in sel.items()), "%s %s does not select the pods %s" % (what, sel, labels))
    if "PodDisruptionBudget" in docs:
        sel = docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"]
        check(all(labels.get(k) == v for k, v in sel.items()), "PodDisruptionBudget does not select the pods")
    tp = svc["spec"]["ports"][0]["targetPort"]
    check(container_port(c, tp) == port, "Service targetPort %s is not the container's %d" % (tp, port))
    ref = hpa["spec"]["scaleTargetRef"]
    check(ref["kind"] == "Deployment" and ref["name"] == dep["metadata"]["name"], "HPA targets %s" % ref)
    check(hpa["spec"]["minReplicas"] >= 1 and hpa["spec"]["maxReplicas"] >= hpa["spec"]["minReplicas"], "HPA replica range")
    stages, _ = dockerfile()
    uid = instr(stage(stages, "gpu"), "USER")[-1].split(":")[0]
    sc = pod["spec"].get("securityContext", {})
    check(sc.get("runAsNonRoot") and str(sc.get("runAsUser")) == uid, "pod securityContext user %s, image USER %s" % (sc.get("runAsUser"), uid))
    info("port %d; probes ready/live; preStop %d s + drain %g s <= grace %d s; GPU limit %s; HPA %d..%d"
         % (port, pre, drain, grace, c["resources"]["limits"]["nvidia.com/gpu"], hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]))


# ------------------------------------------------------------------ KServe

class SdkSchemas:
    """The KServe SDK's models (generated from KServe's CRD OpenAPI), read
    from the wheel without importing it; Kubernetes core types inside them
    are checked against kubernetes-validate's schemas."""

    def __init__(self, wheel_dir):
        import ast
        import zipfile
        wheels = sorted(glob.glob(os.path.join(wheel_dir, "kserve-*.whl")))
        if not wheels:
            raise Fail("no KServe SDK wheel in %s (make test-deploy downloads it)" % wheel_dir)
        self.wheel = os.path.basename(wheels[-1])
        self.classes = {}
        with zipfile.ZipFile(wheels[-1]) as z:
            for n in z.namelist():
                if not re.match(r"kserve/models/v1\w+\.py$", n):
                    continue
                tree = ast.parse(z.read(n).decode())
                for node in tree.body:
                    if isinstance(node, ast.ClassDef):
                        d = {}
                        for b in node.body:
                            if isinstance(b, ast.Assign) and isinstance(b.targets[0], ast.Name) and \
                                    b.targets[0].id in ("openapi_types", "attribute_map"):
                                d[b.targets[0].id] = ast.literal_eval(b.value)
                        if len(d) == 2:
                            self.classes[node.name] = {d["attribute_map"][k]: v for k, v in d["openapi_types"].items()}
        import kubernetes_validate.utils as kvu
        import referencing
        import jsonschema
        v = kvu.latest_version()
        self.k8s_defs = kvu.schema_contents("kubernetes-json-schema/v%s-local-strict/_definitions.json" % v, v)
        self.registry = referencing.Resource.from_contents(self.k8s_defs) @ referencing.Registry()
        self.jsonschema = jsonschema
        self.k8s_checked = set()

    def k8s_key(self, name):
        m = re.match(r"V(\d+)(?:(alpha|beta)\d+)?(\w+)$", name)
        if not m:
            return None
        defs = self.k8s_defs["$defs"]
        short = name[len(re.match(r"V\d+(?:(?:alpha|beta)\d+)?", name).group(0)):]
        ver = re.match(r"V(\d+(?:(?:alpha|beta)\d+)?)", name).group(1)
        for prefix in ("io.k8s.api.core.", "io.k8s.apimachinery.pkg.apis.meta.", "io.k8s.api.apps.", "io.k8s.api."):
            for k in defs:
                if k.startswith(prefix) and k.endswith(".%s.%s" % ("v" + ver, short)):
                    return k
        return None

    def validate(self, value, typ, path):
        if value is None:
            return
        if typ in ("str",):
            check(isinstance(value, str), "%s: %r is not a string" % (path, value))
        elif typ in ("int",):
            check(isinstance(value, int) and not isinstance(value, bool), "%s: %r is not an integer" % (path, value))
        elif typ in ("bool",):
            check(isinstance(value, bool), "%s: %r is not a boolean" % (path, value))
        elif typ in ("float",):
            check(isinstance(value, (int, float)), "%s: %r is not a number" % (path, value))
        elif typ.startswith("list["):
            check(isinstance(value, list), "%s: not a list" % path)
            for i, v in enumerate(value):
                self.validate(v, typ[5:-1], "%s[%d]" % (path, i))
        elif typ.startswith("dict("):
            check(isinstance(value, dict), "%s: not a mapping" % path)
            inner = typ[5:-1].split(",", 1)[1].strip()
            for k, v in value.items():
                self.validate(v, inner, "%s.%s" % (path, k))
        elif typ in self.classes:
            check(isinstance(value, dict), "%s: not a mapping" % path)
            fields = self.classes[typ]
            for k, v in value.items():
                check(k in fields, "%s: unknown field %r (%s has %s)" % (path, k, typ, ", ".join(sorted(fields))))
                self.validate(v, fields[k], "%s.%s" % (path, k))
        else:
            key = self.k8s_key(typ)
            if key is None:
                return  # object, datetime, quantities: free-form
            schema = {"$ref": "%s#/$defs/%s" % (self.k8s_defs["$id"], key)}
            try:
                self.jsonschema.validators.Draft202012Validator(schema, registry=self.registry).validate(value)
            except self.jsonschema.ValidationError as e:
                raise Fail("%s (%s): %s at %s" % (path, key, e.message, "/".join(str(p) for p in e.absolute_path)))
            self.k8s_checked.add(key.rsplit(".", 1)[1])


def kserve_docs():
    docs = {}
    for path in sorted(glob.glob("deploy/kserve/*.yaml")):
        for d in load_yaml_docs(path):
            docs[d["kind"]] = (path, d)
    check("InferenceService" in docs and "ServingRuntime" in docs, "deploy/kserve needs an InferenceService and a ServingRuntime")
    return docs


def t_kserve_schemas():
    sdk = SdkSchemas(os.path.join(VENV, "wheels"))
    docs = kserve_docs()
    want = {"InferenceService": ("serving.kserve.io/v1beta1", "V1beta1InferenceService"),
            "ServingRuntime": ("serving.kserve.io/v1alpha1", "V1alpha1ServingRuntime")}
    for kind, (path, d) in docs.items():
        api, cls = want[kind]
        check(d.get("apiVersion") == api, "%s: apiVersion %s, want %s" % (path, d.get("apiVersion"), api))
        check(cls in sdk.classes, "the SDK has no %s" % cls)
        sdk.validate(d, cls, kind)
    info("%s: %d generated models; InferenceService and ServingRuntime have only known fields of the right types; "
         "embedded Kubernetes types checked against the API schemas: %s"
         % (sdk.wheel, len(sdk.classes), ", ".join(sorted(sdk.k8s_checked))))


def t_kserve_consistency():
    docs = kserve_docs()
    rt = docs["ServingRuntime"][1]
    isvc = docs["InferenceService"][1]
    spec = rt["spec"]
    check("v2" in spec.get("protocolVersions", []), "ServingRuntime does not speak v2")
    c = spec["containers"][0]
    check(c["name"] == "kserve-container", "the runtime's container must be named kserve-container")
    args = [str(a) for a in c["args"]]
    check(arg_value(args, "--model-repository") == "/mnt/models", "the runtime does not serve /mnt/models (KServe's storage folder)")
    port, drain, pre = check_server_container(c, "ServingRuntime")
    check(port == 8080, "KServe routes to port 8080; the runtime listens on %d" % port)
    model = isvc["spec"]["predictor"]["model"]
    check(model.get("protocolVersion") == "v2", "InferenceService protocolVersion %s" % model.get("protocolVersion"))
    check(model.get("runtime") == rt["metadata"]["name"], "InferenceService runtime %s, ServingRuntime %s" % (model.get("runtime"), rt["metadata"]["name"]))
    fmts = {f["name"] for f in spec["supportedModelFormats"]}
    check(model["modelFormat"]["name"] in fmts, "model format %s not in %s" % (model["modelFormat"]["name"], fmts))
    check(model.get("storageUri"), "InferenceService has no storageUri")
    check(str(model.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", "0")) != "0", "InferenceService requests no GPU")
    info("v2 protocol, runtime %s on port %d serving /mnt/models, model format %s" % (rt["metadata"]["name"], port, model["modelFormat"]["name"]))


# ------------------------------------------------------------------ Helm chart

CHART = "deploy/helm/inferd"
# Values the chart must render valid manifests for, beside its defaults.
CHART_VARIANTS = [
    ("defaults", {}),
    ("cpu, fixed replicas", {"gpu": {"count": 0}, "image": {"tag": "cpu"}, "autoscaling": {"enabled": False},
                             "replicaCount": 3, "podDisruptionBudget": {"enabled": False}}),
    ("queue-depth HPA, models volume, extra flags",
     {"autoscaling": {"targetPendingRequests": 8}, "extraArgs": ["--max-queue-size", "256"],
      "models": {"volume": {"persistentVolumeClaim": {"claimName": "inferd-models"}}},
      "nodeSelector": {"nvidia.com/gpu.present": "true"}}),
]


def helm():
    try:
        import helm_python
    except ImportError:
        raise Fail("helm-python-sdk is not installed (make test-deploy installs it from PyPI into %s)" % VENV)
    return helm_python


def helm_render(values, name="inferd"):
    """{kind: manifest} of the chart rendered offline with values."""
    h = helm()
    out = h.Chart.load(CHART).render(values, name=name, namespace="default")
    docs = {}
    for path, text in sorted(out.items()):
        if not path.endswith(".yaml"):
            continue
        for d in yaml.safe_load_all(text):
            if d:
                check(d["kind"] not in docs, "%s: a second %s" % (path, d["kind"]))
                docs[d["kind"]] = d
    return docs


def t_helm_lint():
    h = helm()
    import kubernetes_validate
    from kubernetes_validate import utils as kvu
    from importlib.metadata import version
    latest = kvu.latest_version()
    report = h.lint(CHART, strict=True, kube_version="v%s.0" % latest)
    sev = {0: "unknown", 1: "info", 2: "WARNING", 3: "ERROR"}
    for m in report.get("messages", []):
        info("helm lint: %s %s: %s" % (sev.get(m.get("severity"), m.get("severity")), m.get("path"), m.get("error")))
    bad = [m for m in report.get("messages", []) if m.get("severity", 0) >= 2] + report.get("errors", [])
    check(report.get("total_charts_linted") == 1 and not bad, "helm lint --strict: %s" % bad)
    info("helm-python-sdk %s (Helm %s's Go SDK): lint --strict, no warning or error"
         % (version("helm-python-sdk"), h.helm_sdk_version()))
    for label, values in CHART_VARIANTS:
        docs = helm_render(values)
        for kind, d in docs.items():
            for v in (latest, "1.30"):
                try:
                    kubernetes_validate.validate(d, v, strict=True)
                except Exception as e:  # ValidationError, SchemaNotFoundError
                    raise Fail("chart (%s) %s against Kubernetes %s: %s" % (label, kind, v, getattr(e, "message", str(e))))
        info("rendered (%s): %s valid against Kubernetes %s and 1.30 (kubernetes-validate, strict)"
             % (label, ", ".join(sorted(docs)), latest))
    # Values that would kill a draining pod are refused at render time.
    for values, why in (({"drainTimeoutSeconds": 40}, "liveness window"), ({"terminationGracePeriodSeconds": 30}, "grace period")):
        try:
            helm_render(values)
        except h.HelmError as e:
            check("drainTimeoutSeconds" in str(e), "render with %s failed for another reason: %s" % (values, e))
        else:
            raise Fail("the chart renders %s, whose %s does not cover the drain" % (values, why))
    info("values whose liveness window or grace period does not cover the drain fail to render")


def t_helm_consistency():
    """The chart's defaults render what deploy/k8s/ says, field by field."""
    chart = helm_render({})
    k8s = {d["kind"]: d for _, d in k8s_docs()}
    check(set(chart) == {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"},
          "chart renders %s" % sorted(chart))
    cc = chart["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    kc = k8s["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    port, drain, pre = check_server_container(cc, "chart Deployment")
    check((port, drain, pre) == check_server_container(kc, "k8s Deployment"), "port, drain or preStop differ from deploy/k8s")
    for field in ("args", "ports", "resources", "startupProbe", "readinessProbe", "livenessProbe", "lifecycle", "securityContext"):
        check(cc.get(field) == kc.get(field), "container %s: chart %s, deploy/k8s %s" % (field, cc.get(field), kc.get(field)))
    cp, kp = chart["Deployment"]["spec"]["template"], k8s["Deployment"]["spec"]["template"]
    for field in ("terminationGracePeriodSeconds", "securityContext", "tolerations"):
        check(cp["spec"].get(field) == kp["spec"].get(field), "pod %s differs from deploy/k8s" % field)
    check(cp["metadata"].get("annotations") == kp["metadata"].get("annotations"), "pod annotations differ from deploy/k8s")
    check(chart["Deployment"]["spec"]["strategy"] == k8s["Deployment"]["spec"]["strategy"], "rollout strategy differs")
    labels = cp["metadata"]["labels"]
    for what, sel in (("Deployment", chart["Deployment"]["spec"]["selector"]["matchLabels"]),
                      ("Service", chart["Service"]["spec"]["selector"]),
                      ("PodDisruptionBudget", chart["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"])):
        check(all(labels.get(k) == v for k, v in sel.items()), "chart %s selector %s does not select %s" % (what, sel, labels))
    check(chart["Service"]["spec"]["ports"] == k8s["Service"]["spec"]["ports"], "Service ports differ")
    ch, kh = chart["HorizontalPodAutoscaler"]["spec"], k8s["HorizontalPodAutoscaler"]["spec"]
    check(ch["scaleTargetRef"]["name"] == chart["Deployment"]["metadata"]["name"], "chart HPA targets %s" % ch["scaleTargetRef"])
    for field in ("minReplicas", "maxReplicas", "metrics", "behavior"):
        check(ch[field] == kh[field], "HPA %s: chart %s, deploy/k8s %s" % (field, ch[field], kh[field]))
    check(chart["PodDisruptionBudget"]["spec"]["minAvailable"] == k8s["PodDisruptionBudget"]["spec"]["minAvailable"], "PDB differs")
    info("defaults render deploy/k8s/'s container (args, ports, resources, probes, preStop), grace period, "
         "annotations, Service ports, HPA and PDB; selectors select the pods")


# ------------------------------------------------------------------ Prometheus and Grafana

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
PROM_DIR = "deploy/prometheus"
DASHBOARD = "deploy/grafana/inferd-dashboard.json"
# Exported only while a GPU is in use: looked for in server/srv_metrics.c
# instead of in a CPU server's /metrics.
GPU_ONLY = {"nv_gpu_memory_used_bytes", "nv_gpu_memory_total_bytes", "nv_gpu_utilization"}
PROMQL_WORDS = {"sum", "min", "max", "avg", "count", "by", "without", "rate", "irate", "increase", "histogram_quantile",
                "clamp_min", "clamp_max", "and", "or", "unless", "bool", "on", "ignoring", "group_left", "group_right",
                "offset", "label_values", "topk", "bottomk", "abs", "delta", "deriv", "time", "vector", "scalar"}


def promql_metrics(expr):
    """The metric names an expression reads (label matchers, strings, ranges and groupings removed)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.$])([a-zA-Z_:][\w:]*)(\s*\()?", e):
        if m.group(2) or m.group(1) in PROMQL_WORDS or re.match(r"^(e|inf|nan)$", m.group(1), re.I):
            continue
        names.add(m.group(1))
    return names


def dashboard_exprs():
    dash = json.load(open(DASHBOARD))
    exprs = []
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            check(t.get("expr"), "dashboard panel %r: a target without a PromQL expr" % p.get("title"))
            exprs.append(("panel %r" % p.get("title"), t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.match(r"label_values\((.*),\s*\w+\)$", q)
            check(m, "variable %s: query %r is not label_values(EXPR, LABEL)" % (v["name"], q))
            exprs.append(("variable %s" % v["name"], m.group(1)))
    return dash, exprs


def rule_exprs():
    docs = yaml.safe_load(open(os.path.join(PROM_DIR, "inferd-rules.yml")))
    out, recorded = [], set()
    for g in docs["groups"]:
        for r in g["rules"]:
            out.append(("rule %s" % (r.get("record") or r.get("alert")), r["expr"]))
            if r.get("record"):
                recorded.add(r["record"])
    return out, recorded


def t_prometheus_config():
    if not os.access(PROMTOOL, os.X_OK):
        raise Fail("promtool is not installed (Debian's prometheus package; make test-deploy installs it)")
    rc, out = run([PROMTOOL, "--version"])
    info(out.splitlines()[0])
    rc, out = run([PROMTOOL, "check", "rules", os.path.join(PROM_DIR, "inferd-rules.yml")])
    check(rc == 0, "promtool check rules:\n" + out)
    # Debian builds Prometheus without Kubernetes service discovery, so its
    # promtool rejects kubernetes_sd_configs: those blocks are checked here
    # and replaced by a static target for promtool, which checks the rest
    # (relabelling regexes and actions, intervals, rule files).
    cfg = yaml.safe_load(open(os.path.join(PROM_DIR, "prometheus.yml")))
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    check({"inferd-pods", "inferd"} <= set(jobs), "scrape jobs: %s" % sorted(jobs))
    for j in cfg["scrape_configs"]:
        for sd in j.pop("kubernetes_sd_configs", []):
            check(set(sd) <= {"role", "namespaces", "selectors", "api_server", "kubeconfig_file", "attach_metadata"}
                  and sd.get("role") in ("pod", "endpoints", "service", "node", "ingress", "endpointslice"),
                  "job %s: kubernetes_sd_configs %s" % (j["job_name"], sd))
            j.setdefault("static_configs", []).append({"targets": ["pod.example:8000"]})
    pods = jobs["inferd-pods"]["relabel_configs"]
    sources = {tuple(r.get("source_labels", [])) for r in pods}
    k8s_ann = k8s_docs()
    dep = [d for _, d in k8s_ann if d["kind"] == "Deployment"][0]["spec"]["template"]["metadata"]["annotations"]
    for ann in dep:
        label = "__meta_kubernetes_pod_annotation_" + re.sub(r"[^a-zA-Z0-9_]", "_", ann)
        check(any(label in s for s in sources), "inferd-pods does not use the pods' %s annotation" % ann)
    tmp = tempfile.mkdtemp(prefix="inferd-prom-")
    try:
        shutil.copy(os.path.join(PROM_DIR, "inferd-rules.yml"), tmp)
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            yaml.safe_dump(cfg, f)
        rc, out = run([PROMTOOL, "check", "config", os.path.join(tmp, "prometheus.yml")])
        check(rc == 0, "promtool check config:\n" + out)
        # The dashboard's queries parsed by promtool too, as recording rules
        # (Grafana's variables replaced by what they stand for).
        _, exprs = dashboard_exprs()
        rules = {"groups": [{"name": "dashboard", "rules": [
            {"record": "dashboard:query_%d" % i,
             "expr": e.replace("$__rate_interval", "1m").replace("$model", ".*").replace("$instance", ".*")}
            for i, (_, e) in enumerate(exprs)]}]}
        with open(os.path.join(tmp, "dashboard-rules.yml"), "w") as f:
            yaml.safe_dump(rules, f)
        rc, out = run([PROMTOOL, "check", "rules", os.path.join(tmp, "dashboard-rules.yml")])
        check(rc == 0, "the dashboard's PromQL, as rules:\n" + out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    info("promtool: rules valid, config valid (kubernetes_sd_configs checked here: Debian's build lacks it), "
         "the dashboard's %d queries parse; scrape jobs %s use the pods' annotations %s"
         % (len(exprs), ", ".join(sorted(jobs)), ", ".join(sorted(dep))))


def t_dashboard_metrics():
    """Every metric the dashboard and the rules read is one inferd exports."""
    dash, exprs = dashboard_exprs()
    check(dash.get("uid") and dash.get("panels"), "%s: no uid or no panels" % DASHBOARD)
    rules, recorded = rule_exprs()
    used = {}
    for where, e in exprs + rules:
        for name in promql_metrics(e):
            used.setdefault(name, where)
    check(used, "no metric names found in the dashboard's queries")
    inferd = os.path.join(BUILD, "inferd")
    check(os.access(inferd, os.X_OK), "%s is missing" % inferd)
    repo = local_repo()
    port_file = tempfile.mktemp(prefix="inferd-port-")
    log = tempfile.TemporaryFile()
    p = subprocess.Popen([inferd, "--model-repository", repo, "--host", "127.0.0.1", "--http-port", "0",
                          "--port-file", port_file, "--backend", "cpu"],
                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        port = wait_ready(p, port_file, log, "inferd for the dashboard")
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            text = r.read().decode()
    finally:
        p.terminate()
        p.wait(timeout=40)
        log.close()
        shutil.rmtree(repo, ignore_errors=True)
        for f in (port_file,):
            if os.path.exists(f):
                os.unlink(f)
    exported = set()
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\w+)", line)
        if m:
            exported.add(m.group(1))
            if m.group(2) in ("histogram", "summary"):
                exported.update(m.group(1) + s for s in ("_bucket", "_sum", "_count"))
        elif line and not line.startswith("#"):
            exported.add(re.match(r"[^{\s]+", line).group(0))
    src = open("server/srv_metrics.c").read()
    missing, gpu = [], []
    for name, where in sorted(used.items()):
        if name in exported or name in recorded or name == "up":
            continue
        if name in GPU_ONLY and re.search(r'family\(b, "%s"' % re.escape(name), src):
            gpu.append(name)
            continue
        missing.append("%s (%s)" % (name, where))
    check(not missing, "not exported by inferd: %s" % ", ".join(missing))
    info("%d metric names in the dashboard (%d panels) and rules, all in a CPU inferd's /metrics%s"
         % (len(used), len(dash["panels"]),
            "; GPU-only, found in server/srv_metrics.c instead (no GPU here): " + ", ".join(gpu) if gpu else ""))


# ------------------------------------------------------------------ running the commands

def http_status(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=3) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return 0


def wait_ready(p, port_file, log, what, seconds=60):
    """The port an inferd started with --port-file serves on, once /v2/health/ready says 200."""
    deadline, port = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        if p.poll() is not None:
            log.seek(0)
            raise Fail("%s exited %s:\n%s" % (what, p.returncode, log.read().decode(errors="replace")[-2000:]))
        try:
            port = port or int(open(port_file).read().strip() or 0)
        except (OSError, ValueError):
            pass
        if port and http_status(port, "/v2/health/ready") == 200:
            return port
        time.sleep(0.05)
    raise Fail("%s: not ready within %d s" % (what, seconds))


def serve_once(inferd, args, repo, label, health_paths, healthcheck=None):
    """Runs inferd with a deployment's arguments, made local: the repository
    at repo, 127.0.0.1, a free port, the CPU. Waits for ready, checks the
    health paths (and a Docker/compose healthcheck command), then SIGTERM:
    exit 0 expected. Returns what was changed."""
    args = [str(a) for a in args]
    changes = []
    local = []
    i = 0
    port_file = tempfile.mktemp(prefix="inferd-port-")
    while i < len(args):
        a = args[i]
        v = args[i + 1] if i + 1 < len(args) else None
        if a == "--model-repository":
            local += [a, repo]; i += 2; continue
        if a == "--host":
            if v != "127.0.0.1":
                changes.append("--host %s->127.0.0.1" % v)
            local += [a, "127.0.0.1"]; i += 2; continue
        if a == "--http-port":
            local += [a, "0", "--port-file", port_file]; i += 2; continue
        if a == "--backend" and v == "cuda":
            changes.append("--backend cuda->cpu")
            local += [a, "cpu"]; i += 2; continue
        local.append(a); i += 1
    log = tempfile.TemporaryFile()
    p = subprocess.Popen([inferd] + local, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        port = wait_ready(p, port_file, log, "%s: inferd %s" % (label, " ".join(local)))
        for path in health_paths:
            check(http_status(port, path) == 200, "%s: GET %s is not 200" % (label, path))
        if healthcheck:
            hc = [h.replace("127.0.0.1:8000/", "127.0.0.1:%d/" % port).replace("127.0.0.1:8080/", "127.0.0.1:%d/" % port)
                  for h in healthcheck]
            rc, out = run(hc, timeout=10)
            check(rc == 0, "%s: the healthcheck command %s failed (%d): %s" % (label, " ".join(hc), rc, out))
        drain = float(arg_value(local, "--drain-timeout") or 30)
        p.send_signal(signal.SIGTERM)
        try:
            status = p.wait(timeout=drain + 5)
        except subprocess.TimeoutExpired:
            raise Fail("%s: still running %g s after SIGTERM" % (label, drain + 5))
        check(status == 0, "%s: exit %s after SIGTERM" % (label, status))
        return changes
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        try:
            os.unlink(port_file)
        except OSError:
            pass


def local_repo():
    tmp = tempfile.mkdtemp(prefix="inferd-deploy-repo-")
    shutil.copytree(os.path.join("model_repository", MODEL), os.path.join(tmp, MODEL))
    return tmp


def t_commands_run():
    inferd = os.path.join(BUILD, "inferd")
    check(os.access(inferd, os.X_OK), "%s is missing" % inferd)
    stages, _ = dockerfile()
    cfg = compose_config(("cpu", "scale"))
    k8s = {d["kind"]: d for _, d in k8s_docs()}
    rt = kserve_docs()["ServingRuntime"][1]
    cases = []
    for name in ("cpu", "gpu"):
        st = stage(stages, name)
        hc = re.search(r"CMD\s+(\[.*\])", " ".join(instr(st, "HEALTHCHECK")))
        cases.append(("Dockerfile %s CMD" % name, json_instr(st, "CMD"), ["/v2/health/ready"],
                      json.loads(hc.group(1)) if hc else None))
    for name in ("inferd", "inferd-cpu", "inferd-replica"):
        s = cfg["services"][name]
        cases.append(("compose %s" % name, s["command"], [], s["healthcheck"]["test"][1:]))
    c = k8s["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    cases.append(("k8s Deployment", c["args"], [c["readinessProbe"]["httpGet"]["path"], c["livenessProbe"]["httpGet"]["path"]], None))
    c = rt["spec"]["containers"][0]
    cases.append(("KServe ServingRuntime", c["args"], [c["readinessProbe"]["httpGet"]["path"], c["livenessProbe"]["httpGet"]["path"]], None))
    repo = local_repo()
    try:
        for label, args, paths, hc in cases:
            changes = serve_once(inferd, args, repo, label, paths, hc)
            info("%s: ready, health %s, drained on SIGTERM, exit 0%s"
                 % (label, "+ healthcheck command" if hc else "probes", " (here: %s)" % ", ".join(changes) if changes else ""))
    finally:
        shutil.rmtree(repo, ignore_errors=True)


# ------------------------------------------------------------------ the GPU image's driver

# The oldest driver each CUDA major's runtime runs on (CUDA's minor-version
# compatibility: any 12.x runtime on R525.60.13+, when the binary holds SASS
# for the GPU and so needs no PTX compiled by the driver).
DRIVER_FLOOR = {12: (525, "R525.60.13"), 13: (580, "R580")}
IMAGE_DRIVER = 535   # issue 23 item 8: an R535 driver runs the GPU image


def make_nvcc_flags(release):
    """NVCCFLAGS as mk/build.mk sets them for an nvcc that reports RELEASE
    ("12.6"): a stand-in nvcc first on PATH, the build in a scratch folder."""
    tmp = tempfile.mkdtemp(prefix="inferd-nvcc-")
    try:
        fake = os.path.join(tmp, "nvcc")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho 'Cuda compilation tools, release %s, V%s.0'\n" % (release, release))
        os.chmod(fake, 0o755)
        with open(os.path.join(tmp, "print.mk"), "w") as f:
            f.write("print-nvccflags: ; @echo '$(NVCCFLAGS)'\n")
        env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CUDA_ARCHS")}
        env["PATH"] = tmp + os.pathsep + env.get("PATH", "")
        rc, out = run(["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", os.path.join(tmp, "print.mk"),
                       "CUDA=1", "BUILD=" + os.path.join(tmp, "build"), "print-nvccflags"], env=env)
        check(rc == 0, "make print-nvccflags with nvcc %s:\n%s" % (release, out))
        return out.strip().splitlines()[-1].split()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def t_cuda_driver_floor():
    stages, args = dockerfile()
    cv, ub = args.get("CUDA_VERSION", ""), args.get("UBUNTU_VERSION", "")
    major = int(cv.split(".")[0])
    check(major in DRIVER_FLOOR, "CUDA_VERSION %s: no known driver floor" % cv)
    floor, name = DRIVER_FLOOR[major]
    check(floor <= IMAGE_DRIVER, "CUDA_VERSION %s needs an %s driver; the image must run on R%d"
          % (cv, name, IMAGE_DRIVER))
    info("CUDA_VERSION %s: runtime runs on %s+ (R%d asked for)" % (cv, name, IMAGE_DRIVER))
    # The flags mk/build.mk gives the image's nvcc: every target as SASS, and a
    # fat binary compression the oldest driver reads (12.x: -compress-all;
    # --compress-mode exists from 12.8 only, and its size mode needs R550).
    rel = "%d.%s" % (major, cv.split(".")[1])
    flags = make_nvcc_flags(rel)
    text = " ".join(flags)
    archs = re.findall(r"code=sm_(\d+)", text)
    check(archs, "no SASS target in %s" % text)
    if major == 12:
        check(not any(f.startswith("--compress-mode") for f in flags),
              "nvcc %s gets --compress-mode, which 12.x drivers before R550 (and nvcc before 12.8) lack: %s"
              % (rel, text))
        check("-Xfatbin=-compress-all" in flags, "nvcc %s: no -Xfatbin=-compress-all: %s" % (rel, text))
    info("nvcc %s gets: %s" % (rel, " ".join(f for f in flags if "compress" in f) or "no compression flag"))
    info("SASS for sm_%s; PTX only for the newest (GPUs after it need a newer driver anyway)" % ", sm_".join(archs))
    # The nvcc here keeps the flags its own release allows.
    release = local_cuda_release()
    if release and release[0] >= 13:
        here = make_nvcc_flags("%d.%d" % release)
        check("--compress-mode=size" in here, "nvcc %d.%d here lost --compress-mode=size: %s" % (*release, " ".join(here)))
        info("nvcc %d.%d here gets --compress-mode=size" % release)
    # README says which image and which driver.
    readme = open("README.md").read()
    for kind in ("devel", "runtime"):
        tag = "nvidia/cuda:%s-cudnn-%s-ubuntu%s" % (cv, kind, ub)
        check(tag in readme, "README.md does not name %s" % tag)
    check("R%d" % IMAGE_DRIVER in readme, "README.md does not say that an R%d driver runs the image" % IMAGE_DRIVER)
    info("README.md names the image's CUDA tags and R%d" % IMAGE_DRIVER)


# ------------------------------------------------------------------ image builds

def build_context(dest):
    """Copies the files Docker would send as the build context (.dockerignore
    applied by docker-py, the library Debian's docker-compose builds with)."""
    code = ("import sys\nfrom docker.utils.build import exclude_paths\n"
            "pats=[l.strip() for l in open('.dockerignore') if l.strip() and not l.startswith('#')]\n"
            "print('\\n'.join(sorted(exclude_paths('.', pats))))\n")
    rc, out = run([SYSTEM_PYTHON, "-c", code])
    check(rc == 0, "listing the build context (python3-docker):\n" + out)
    files = [f for f in out.splitlines() if f]
    for f in files:
        if os.path.isdir(f) and not os.path.islink(f):
            continue
        os.makedirs(os.path.join(dest, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(f, os.path.join(dest, f), follow_symlinks=False)
    return files


def image_build(stage_name, run_stage):
    stages, _ = dockerfile()
    st = stage(stages, stage_name)
    cmd = stage_run_make(st)
    tmp = tempfile.mkdtemp(prefix="inferd-context-")
    try:
        files = build_context(tmp)
        check(not any(f.startswith(("build/", ".git/")) for f in files), "the build context holds build/ or .git/")
        top = sorted({f.split("/")[0] for f in files})
        info("build context: %d files (%s)" % (len(files), ", ".join(top)))
        t = time.monotonic()
        env = dict(os.environ)
        env.pop("MAKEFLAGS", None)
        env.pop("MFLAGS", None)
        env.pop("MAKELEVEL", None)
        rc, out = run(["sh", "-ec", cmd], timeout=600, cwd=tmp, env=env)
        check(rc == 0, "%s's RUN %s failed in the build context:\n%s" % (stage_name, cmd, out[-4000:]))
        debs = open(os.path.join(tmp, "build", "runtime-debs")).read().split()
        check(debs, "runtime-debs.sh found no package")
        info("RUN %s ... : built in %.0f s; runtime packages: %s" % (cmd.split("\\")[0][:60], time.monotonic() - t, " ".join(debs)))
        rt = stage(stages, run_stage)
        copied = " ".join(instr(rt, "COPY"))
        for prog in ("inferd", "inferctl", "inferd-loadgen"):
            check(os.access(os.path.join(tmp, "build", prog), os.X_OK), "the stage did not build %s" % prog)
            check("/src/build/%s" % prog in copied, "%s does not copy %s" % (run_stage, prog))
        return tmp, rt
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def t_image_build_cpu():
    tmp, rt = image_build("cpu-build", "cpu")
    try:
        cmd = json_instr(rt, "CMD")
        hc = json.loads(re.search(r"CMD\s+(\[.*\])", " ".join(instr(rt, "HEALTHCHECK"))).group(1))
        # The image's /models is the context's model_repository.
        changes = serve_once(os.path.join(tmp, "build", "inferd"), cmd, os.path.join(tmp, "model_repository"),
                             "cpu image CMD", ["/v2/health/ready", "/v2/health/live"], hc)
        info("the built inferd serves the context's model_repository with the image's CMD and passes its HEALTHCHECK%s"
             % (" (here: %s)" % ", ".join(changes) if changes else ""))
        rc, out = run([os.path.join(tmp, "build", "inferd"), "--help"])
        check(rc == 0, "inferd --help")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def t_image_build_cuda():
    if not local_cuda_release():
        raise Skip("no nvcc here: the CUDA stage's build is not tried")
    tmp, rt = image_build("cuda-build", "gpu")
    try:
        rc, out = run([os.path.join(tmp, "build", "inferd"), "--help"])
        check(rc == 0, "the CUDA build's inferd --help:\n" + out)
        info("compiled with the nvcc and gcc here (the image compiles in NVIDIA's devel image); not run on a GPU")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def t_scale_out():
    out = tempfile.mktemp(prefix="inferd-scale-out-", suffix=".json")
    try:
        p = subprocess.run([SYSTEM_PYTHON, "tests/deploy/scale_out_test.py", "--build", BUILD, "--json", out],
                           stdin=subprocess.DEVNULL, timeout=240)
        check(p.returncode == 0, "tests/deploy/scale_out_test.py failed")
    finally:
        try:
            os.unlink(out)
        except OSError:
            pass


CHECKS = [
    ("compose_config", t_compose_config),
    ("dockerfile_lint", t_dockerfile_lint),
    ("dockerfile_structure", t_dockerfile_structure),
    ("cuda_driver_floor", t_cuda_driver_floor),
    ("nginx_config", t_nginx_config),
    ("k8s_schemas", t_k8s_schemas),
    ("k8s_consistency", t_k8s_consistency),
    ("kserve_schemas", t_kserve_schemas),
    ("kserve_consistency", t_kserve_consistency),
    ("helm_lint", t_helm_lint),
    ("helm_consistency", t_helm_consistency),
    ("prometheus_config", t_prometheus_config),
    ("dashboard_metrics", t_dashboard_metrics),
    ("commands_run", t_commands_run),
    ("image_build_cpu", t_image_build_cpu),
    ("image_build_cuda", t_image_build_cuda),
    ("scale_out", t_scale_out),
]


def main(argv):
    sys.stdout.reconfigure(line_buffering=True)
    filters = [a for a in argv if not a.startswith("-")]
    passed = failed = skipped = 0
    for name, fn in CHECKS:
        if filters and not any(f in name for f in filters):
            continue
        print(name)
        t0 = time.monotonic()
        try:
            fn()
            word = "ok"
            passed += 1
        except Skip as e:
            print("  skip: %s" % e)
            word = "skipped"
            skipped += 1
        except Fail as e:
            print("  FAIL: %s" % e)
            word = "FAILED"
            failed += 1
        except Exception as e:  # a broken check is a failed check
            print("  FAIL: %s: %s" % (type(e).__name__, e))
            word = "FAILED"
            failed += 1
        print("  %s (%.0f ms)" % (word, (time.monotonic() - t0) * 1000))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main(sys.argv[1:]))
