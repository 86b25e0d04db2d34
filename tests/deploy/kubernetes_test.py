#!/usr/bin/env python3
"""deploy/kubernetes: every overlay renders, each object matches the API
schema of its kind, and what the manifests say about the server agrees with
the server itself.

  kubernetes_test.py BINARY SOURCE_DIR

- `kubectl kustomize` renders base, each overlay and kserve/;
- each object is checked against its kind's schema (k8s_validate.mjs, with
  the pinned schemas of scripts/fetch_k8s_schemas.sh);
- the container's args are flags `ortgpu serve --help` lists; its ports,
  probes, Service, ServiceMonitor and the KServe runtime use the ports those
  args (or serve's defaults) give; the termination grace period outlasts
  the drain; the init container runs `ortgpu doctor --require gpu --json`;
- against a live `ortgpu serve`: the probes' paths answer 200, the
  Deployment's --allow-host names pass the Host check (another gets 403), and
  the metric names the prometheus-adapter rules and the HPA use appear in its
  /metrics after an inference.
Skipped (exit 77) only when kubectl or the schemas cannot be had here.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_support import ADD_SUB_REQUEST, ServeChild, fail, run, serve_flags, skip  # noqa: E402

RENDERED = ["base", "overlays/dev", "overlays/production", "kserve"]
problems = []


def check(ok, message):
    if not ok:
        problems.append(message)


def render(source):
    objects = {}
    for target in RENDERED:
        code, text = run(["kubectl", "kustomize", os.path.join(source, "deploy", "kubernetes", target)])
        if code != 0:
            fail(f"kubectl kustomize deploy/kubernetes/{target} exited {code}:\n{text}")
        objects[target] = [o for o in yaml.safe_load_all(text) if o]
    return objects


def validate_schemas(source, objects):
    made = subprocess.run([os.path.join(source, "scripts", "fetch_k8s_schemas.sh")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=600)
    if made.returncode != 0:
        skip("cannot install the Kubernetes schemas: " + made.stderr.decode(errors="replace").strip())
    modules = made.stdout.decode().strip()
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump([{"source": t, "object": o} for t, objs in objects.items() for o in objs], f)
        f.flush()
        here = os.path.dirname(os.path.abspath(__file__))
        code, text = run(["node", os.path.join(here, "k8s_validate.mjs"), modules, f.name,
                          os.path.join(here, "schemas", "kserve.json")])
    check(code == 0, "schema check:\n" + text)


def parse_args(args):
    """serve's args as [(flag, value)]: --flag VALUE, --flag=VALUE and bare --flag."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if not a.startswith("--"):
            problems.append(f"argument {a!r} is not a flag")
            i += 1
            continue
        if "=" in a:
            out.append(tuple(a.split("=", 1)))
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            out.append((a, args[i + 1]))
            i += 1
        else:
            out.append((a, ""))
        i += 1
    return out


def check_serve_args(where, args, flags):
    """The flags exist and the ports they give; flag -> value (defaults filled in)."""
    given = parse_args(args)
    for flag, _ in given:
        check(flag in flags, f"{where}: `ortgpu serve --help` has no {flag}")
    values = {f: v for f, v in flags.items()}
    values.update({f: v for f, v in given if f != "--allow-host"})
    values["--allow-host"] = [v for f, v in given if f == "--allow-host"]
    check(values["--host"] == "0.0.0.0", f"{where}: --host {values['--host']}: unreachable from other pods")
    return values


def port_of(container, ref):
    if isinstance(ref, int):
        return ref
    return next((p["containerPort"] for p in container.get("ports", []) if p.get("name") == ref), None)


def check_deployment(target, objs, flags, doctor_help):
    by_kind = {}
    for o in objs:
        by_kind.setdefault(o["kind"], []).append(o)
    dep = by_kind["Deployment"][0]
    pod = dep["spec"]["template"]["spec"]
    c = next(c for c in pod["containers"] if c["name"] == "ortgpu")
    w = f"{target}: Deployment/{dep['metadata']['name']}"
    values = check_serve_args(w, c.get("args", []), flags)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for name, flag in (("http", "--http-port"), ("grpc", "--grpc-port"), ("metrics", "--metrics-port")):
        check(str(ports.get(name)) == values[flag], f"{w}: containerPort {name} {ports.get(name)} but serve listens on {flag} {values[flag]}")
    for probe, path in (("startupProbe", "/v2/health/ready"), ("livenessProbe", "/v2/health/live"),
                        ("readinessProbe", "/v2/health/ready")):
        get = c.get(probe, {}).get("httpGet", {})
        check(get.get("path") == path, f"{w}: {probe} asks {get.get('path')}, not {path}")
        check(str(port_of(c, get.get("port"))) == values["--http-port"], f"{w}: {probe} port {get.get('port')} is not the HTTP port")
    for cont in pod["containers"] + pod.get("initContainers", []):
        limits = cont.get("resources", {}).get("limits", {})
        check(str(limits.get("nvidia.com/gpu")) == "1", f"{w}: container {cont['name']} does not limit nvidia.com/gpu to 1")
    init = pod.get("initContainers", [])
    check(any(i.get("command") == ["ortgpu", "doctor", "--require", "gpu", "--json"] for i in init),
          f"{w}: no init container runs `ortgpu doctor --require gpu --json`")
    check("--require" in doctor_help and "--json" in doctor_help, "`ortgpu doctor --help` lacks --require or --json")
    drain_s = int(values["--drain-timeout-ms"]) / 1000
    pre = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    grace = pod.get("terminationGracePeriodSeconds", 30)
    check(grace > drain_s + pre, f"{w}: terminationGracePeriodSeconds {grace} <= preStop {pre} s + drain {drain_s} s")
    mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
    check(values["--model-repository"] in mounts, f"{w}: --model-repository {values['--model-repository']} is no volume mount")

    svc = by_kind["Service"][0]
    name = svc["metadata"]["name"]
    for host in (name, f"{name}.$(POD_NAMESPACE)", f"{name}.$(POD_NAMESPACE).svc", f"{name}.$(POD_NAMESPACE).svc.cluster.local"):
        check(host in values["--allow-host"], f"{w}: --allow-host {host} missing: clients using the Service's name would get 403")
    check(any(e.get("name") == "POD_NAMESPACE" for e in c.get("env", [])), f"{w}: $(POD_NAMESPACE) is used but not set")
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    for p in svc_ports.values():
        check(port_of(c, p["targetPort"]) is not None, f"{target}: Service port {p['name']} targets {p['targetPort']}, which the pod lacks")
    selector = svc["spec"]["selector"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in selector.items()), f"{target}: the Service selects {selector}, not the pods {labels}")
    for kind in ("PodDisruptionBudget", "ServiceMonitor"):
        sel = by_kind[kind][0]["spec"]["selector"]["matchLabels"]
        target_labels = labels if kind == "PodDisruptionBudget" else svc["metadata"].get("labels", {})
        check(all(target_labels.get(k) == v for k, v in sel.items()), f"{target}: the {kind} selects {sel}, not {target_labels}")
    for e in by_kind["ServiceMonitor"][0]["spec"]["endpoints"]:
        sp = svc_ports.get(e["port"])
        check(sp is not None and str(port_of(c, sp["targetPort"])) == values["--metrics-port"],
              f"{target}: the ServiceMonitor scrapes port {e['port']}, not serve's metrics port")
        check(e.get("path") == "/metrics", f"{target}: the ServiceMonitor scrapes {e.get('path')}")
    hpa = by_kind["HorizontalPodAutoscaler"][0]
    check(hpa["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"], f"{target}: the HPA scales {hpa['spec']['scaleTargetRef']}")
    rules = yaml.safe_load(by_kind["ConfigMap"][0]["data"]["config.yaml"])["rules"]
    exposed = {r["name"]["as"] for r in rules}
    for m in hpa["spec"]["metrics"]:
        check(m["type"] == "Pods" and m["pods"]["metric"]["name"] in exposed,
              f"{target}: the HPA's metric {m} is none the adapter rules expose ({exposed})")
    # With two replicas or more, a drain must leave one serving (one replica: nothing to keep).
    pdb = by_kind["PodDisruptionBudget"][0]["spec"]
    least = hpa["spec"]["minReplicas"]
    check(least < 2 or pdb.get("maxUnavailable", least) < least,
          f"{target}: the PodDisruptionBudget {pdb} would let a drain take all {least} replicas")
    return rules, values["--allow-host"]


def check_kserve(objs, flags):
    runtime = next(o for o in objs if o["kind"] == "ClusterServingRuntime")
    c = runtime["spec"]["containers"][0]
    w = f"kserve: ClusterServingRuntime/{runtime['metadata']['name']}"
    check(c.get("command") == ["ortgpu", "serve"], f"{w}: command {c.get('command')}")
    values = check_serve_args(w, c.get("args", []), flags)
    check([p["containerPort"] for p in c["ports"]] == [int(values["--http-port"])], f"{w}: ports {c['ports']} are not --http-port")
    check(runtime["spec"]["annotations"]["prometheus.kserve.io/port"] == values["--metrics-port"], f"{w}: metrics port annotation")
    probe = c["readinessProbe"]["httpGet"]
    check(probe["path"] == "/v2/health/ready" and str(probe["port"]) == values["--http-port"], f"{w}: readinessProbe {probe}")
    check({"v2", "grpc-v2"} <= set(runtime["spec"]["protocolVersions"]), f"{w}: protocolVersions lack v2 or grpc-v2")
    check(any(f["name"] == "onnx" for f in runtime["spec"]["supportedModelFormats"]), f"{w}: no onnx model format")
    for isvc in (o for o in objs if o["kind"] == "InferenceService"):
        model = isvc["spec"]["predictor"]["model"]
        iw = f"kserve: InferenceService/{isvc['metadata']['name']}"
        check(model["runtime"] == runtime["metadata"]["name"], f"{iw}: runtime {model['runtime']}")
        if model.get("protocolVersion") == "grpc-v2":
            check([p["containerPort"] for p in model.get("ports", [])] == [int(values["--grpc-port"])], f"{iw}: gRPC port is not --grpc-port")
            check(all(p.get("name") == "h2c" for p in model["ports"]), f"{iw}: a gRPC port must be named h2c")


def probe_paths(objects):
    """Every httpGet probe path in the renderings."""
    paths = set()
    for objs in objects.values():
        for o in objs:
            spec = o.get("spec", {})
            pod = spec.get("template", {}).get("spec", spec)
            for c in pod.get("containers", []) + pod.get("initContainers", []):
                for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                    if "httpGet" in c.get(probe, {}):
                        paths.add(c[probe]["httpGet"]["path"])
    return paths


def check_live(binary, source, rules, paths, allow_hosts):
    """The probes' paths answer 200 on a live server with its models ready; with
    the Deployment's --allow-host names (namespace "default"), those names get
    through the Host check and another does not; the series the adapter rules
    read are in its /metrics."""
    hosts = [h.replace("$(POD_NAMESPACE)", "default") for h in allow_hosts]
    names = set()
    for r in rules:
        names |= set(re.findall(r"\bnv_[a-z_]+", r["seriesQuery"] + r["metricsQuery"]))
    with ServeChild([binary, "serve", "--model-repository", os.path.join(source, "examples", "model_repository"),
                     "--http-port", "0", "--metrics-port", "0", "--grpc-port", "-1"]
                    + [a for h in hosts for a in ("--allow-host", h)]) as s:
        for host in hosts:
            status, text = s.request("GET", "/v2/health/ready", host=host)
            check(status == 200, f"Host {host} (an --allow-host of the Deployment) gets {status} {text[:200]}")
        status, _ = s.request("GET", "/v2/health/ready", host="not-allowed.example.com")
        check(status == 403, f"Host not-allowed.example.com gets {status}, not 403: the Host check is off")
        for path in sorted(paths):
            status, text = s.get(path)
            check(status == 200, f"a probe asks {path}, which a ready server answers {status} {text[:200]}")
        s.infer("add_sub", ADD_SUB_REQUEST)
        status, metrics = s.get("/metrics", port=s.metrics_port)
        s.stop()
    check(status == 200, f"/metrics answered {status}")
    for name in sorted(names):
        check(re.search(rf'^{name}\{{model="add_sub",version="1"\}} \d', metrics, re.M) is not None,
              f"the adapter rules read {name}, which the live /metrics does not have for model add_sub:\n{metrics[:1500]}")
    check({"nv_inference_queue_duration_us", "nv_inference_request_success"} <= names,
          f"the adapter rules read {sorted(names)}, not queue time and successes")


def main():
    binary, source = sys.argv[1:3]
    if not shutil.which("kubectl"):
        skip("kubectl is not installed (it renders the kustomize trees)")
    flags = serve_flags(binary)
    _, doctor_help = run([binary, "doctor", "--help"])
    objects = render(source)
    validate_schemas(source, objects)
    rules = allow_hosts = None
    for target in ("base", "overlays/dev", "overlays/production"):
        rules, allow_hosts = check_deployment(target, objects[target], flags, doctor_help)
    check_kserve(objects["kserve"], flags)
    check_live(binary, source, rules, probe_paths(objects), allow_hosts)
    if problems:
        fail("\n".join(problems))
    print(f"{sum(map(len, objects.values()))} objects in {len(RENDERED)} renderings agree with their schemas and ortgpu serve")


if __name__ == "__main__":
    main()
