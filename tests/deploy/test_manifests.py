"""Everything under deploy/ parses, and refers only to what exists.

- every YAML/JSON file under deploy/ (compose included) parses;
- the Grafana dashboard and the alert rules query only metric names that arena/metrics.py defines (read
  from a fresh registry), with only the labels those metrics have: renaming a metric or a label without
  updating deploy/ fails here;
- compose, Prometheus, Grafana and Kubernetes files agree with each other (ports, names, mounts).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from arena import metrics

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
PROMETHEUS_DIR = DEPLOY / "prometheus"
GRAFANA = DEPLOY / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "pilotta-arena.json"
COMPOSE = DEPLOY / "docker-compose.yml"
K8S = DEPLOY / "k8s"

# Labels Prometheus or our scrape configs attach to every series, on top of the metric's own labels.
TARGET_LABELS = frozenset({"job", "instance", "component", "pod", "deployment"})
# Non-pilotta series the rules may use (only in unit-test input, to show an unrelated target).
PROMETHEUS_BUILTINS = frozenset({"up"})
# Grafana/PromQL identifiers that look like labels in our checks but aren't.
METRIC_RE = re.compile(r"(?<![\w:])(pilotta_[a-zA-Z0-9_]+)")
SELECTOR_RE = re.compile(r"(?<![\w:])(pilotta_[a-zA-Z0-9_]+)\s*\{([^}]*)\}")
MATCHER_RE = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
GROUPING_RE = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
LEGEND_RE = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
TEMPLATE_LABELS_RE = re.compile(r"\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)")


def _yaml() -> ModuleType:
    try:
        import yaml
    except ImportError:
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail("PyYAML is required in CI (test dependency pyyaml)")
        pytest.skip("PyYAML not installed: pip install pyyaml")
    return yaml


def _load_yaml_docs(path: Path) -> list[Any]:
    return [d for d in _yaml().safe_load_all(path.read_text()) if d is not None]


# ---------------------------------------------------------------------------------------------------------
# the metric catalogue, from a fresh registry


@pytest.fixture(scope="module")
def series_labels() -> dict[str, frozenset[str]]:
    """Exposed series name -> label names, for every series arena.metrics registers in a fresh registry."""
    registry = CollectorRegistry()
    exposed = metrics.exposed_series_names(registry)
    assert exposed, "arena.metrics registered nothing"
    labels: dict[str, frozenset[str]] = {}
    for info in metrics.metric_infos():
        for name in info.series_names():
            extra = {"le"} if name.endswith("_bucket") else set()
            labels[name] = frozenset(info.labels) | extra
    assert set(labels) == set(exposed)
    return labels


def _check_expr(expr: str, series_labels: dict[str, frozenset[str]], where: str) -> frozenset[str]:
    """Assert ``expr`` uses only defined metrics and their labels; return the labels it can see."""
    names = set(METRIC_RE.findall(expr))
    assert names, f"{where}: query uses no pilotta_ metric: {expr!r}"
    unknown = sorted(n for n in names if n not in series_labels)
    assert not unknown, f"{where}: metrics not defined in arena/metrics.py: {unknown} in {expr!r}"
    for name, body in SELECTOR_RE.findall(expr):
        bad = set(MATCHER_RE.findall(body)) - series_labels[name] - TARGET_LABELS
        assert not bad, f"{where}: {name} has no label(s) {sorted(bad)}: {expr!r}"
    visible = frozenset().union(*(series_labels[n] for n in names)) | TARGET_LABELS
    for group in GROUPING_RE.findall(expr):
        used = {label.strip() for label in group.split(",") if label.strip()}
        bad = used - visible
        assert not bad, f"{where}: grouping by unknown label(s) {sorted(bad)}: {expr!r}"
    return visible


# ---------------------------------------------------------------------------------------------------------
# parsing


BUILD = DEPLOY / "docker" / "build"  # what `make image` prepares (git-ignored: the wheelhouse, node_modules)


def _deploy_files(*suffixes: str) -> Iterator[Path]:
    for path in sorted(DEPLOY.rglob("*")):
        if path.is_file() and path.suffix in suffixes and BUILD not in path.parents:
            yield path


@pytest.mark.timeout(60)
def test_every_yaml_file_parses() -> None:
    files = list(_deploy_files(".yml", ".yaml"))
    assert COMPOSE in files
    assert len(files) >= 15
    for path in files:
        docs = _load_yaml_docs(path)
        assert docs, f"{path.relative_to(REPO)} is empty"
        for doc in docs:
            assert isinstance(doc, dict), f"{path.relative_to(REPO)}: top level is not a mapping"


@pytest.mark.timeout(60)
def test_every_json_file_parses() -> None:
    files = list(_deploy_files(".json"))
    assert DASHBOARD in files
    for path in files:
        json.loads(path.read_text())


# ---------------------------------------------------------------------------------------------------------
# dashboard and alerts refer only to defined metrics


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def _panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])  # collapsed rows


@pytest.mark.timeout(60)
def test_dashboard_queries_only_defined_metrics(series_labels: dict[str, frozenset[str]]) -> None:
    dashboard = _dashboard()
    queried: set[str] = set()
    for panel in _panels(dashboard):
        if panel["type"] == "row":
            continue
        targets = panel.get("targets", [])
        assert targets, f"panel {panel['title']!r} has no query"
        for target in targets:
            where = f"panel {panel['title']!r} query {target['refId']}"
            visible = _check_expr(target["expr"], series_labels, where)
            queried.update(METRIC_RE.findall(target["expr"]))
            legend_labels = set(LEGEND_RE.findall(target.get("legendFormat", "")))
            assert legend_labels <= visible, f"{where}: legend uses unknown labels {legend_labels - visible}"
    # Every metric family is on the dashboard somewhere.
    for info in metrics.metric_infos():
        assert set(info.series_names()) & queried, f"{info.name} is on no dashboard panel"


@pytest.mark.timeout(60)
def test_dashboard_variables_use_defined_metrics(series_labels: dict[str, frozenset[str]]) -> None:
    for var in _dashboard()["templating"]["list"]:
        if var["type"] != "query":
            continue
        query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        match = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", query.strip())
        assert match, f"variable {var['name']}: unexpected query {query!r}"
        metric, label = match.groups()
        assert metric in series_labels, f"variable {var['name']}: {metric} not defined"
        assert label in series_labels[metric], f"variable {var['name']}: {metric} has no label {label}"


@pytest.mark.timeout(60)
def test_dashboard_shape() -> None:
    dashboard = _dashboard()
    assert dashboard["uid"] == "pilotta-arena"
    ids = [p["id"] for p in _panels(dashboard)]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    exprs = " ".join(t["expr"] for p in _panels(dashboard) for t in p.get("targets", []))
    for quantile in ("0.5", "0.9", "0.99"):
        assert f"histogram_quantile({quantile}, sum by (bot, le)" in exprs
    # Queries use the provisioned datasource through the $datasource variable.
    datasources = _load_yaml_docs(GRAFANA / "provisioning" / "datasources" / "prometheus.yml")[0]
    uids = {d["uid"] for d in datasources["datasources"]}
    ds_var = next(v for v in dashboard["templating"]["list"] if v["type"] == "datasource")
    assert ds_var["current"]["value"] in uids
    for panel in _panels(dashboard):
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}"


@pytest.mark.timeout(60)
def test_alert_rules_use_only_defined_metrics(series_labels: dict[str, frozenset[str]]) -> None:
    rules = _load_yaml_docs(PROMETHEUS_DIR / "alerts.yml")[0]
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    assert {
        "PilottaNoLiveWorkers",
        "PilottaQueueGrowing",
        "PilottaBotErrorRateHigh",
    } <= {a["alert"] for a in alerts}
    for rule in alerts:
        where = f"alert {rule['alert']}"
        visible = _check_expr(rule["expr"], series_labels, where)
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, where
        for text in rule.get("annotations", {}).values():
            used = set(TEMPLATE_LABELS_RE.findall(text))
            assert used <= visible, f"{where}: annotation uses unknown labels {used - visible}"


@pytest.mark.timeout(60)
def test_the_bot_error_alert_says_what_the_arena_does_about_a_failing_bot() -> None:
    """The alert's text states the limits the arena suspends a version at (its defaults: ForfeitLimits and
    SUSPEND_AFTER), so that an operator paged by it knows that the rate itself suspends nobody."""
    from arena.bots.suspension import SUSPEND_AFTER
    from arena.model import ForfeitLimits

    rules = _load_yaml_docs(PROMETHEUS_DIR / "alerts.yml")[0]
    (rule,) = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == "PilottaBotErrorRateHigh"]
    text = " ".join(rule["annotations"]["description"].split())
    d = ForfeitLimits()
    assert "does not act on this rate" in text and "may be suspended" not in text
    assert f"forfeited {d.in_a_row} matches in a row or {d.in_window} of its last {d.window}" in text
    assert f"failed to start in {SUSPEND_AFTER} matches in a row" in text


@pytest.mark.timeout(60)
def test_alert_unit_test_series_are_defined_metrics(series_labels: dict[str, frozenset[str]]) -> None:
    tests = _load_yaml_docs(PROMETHEUS_DIR / "alerts_test.yml")[0]
    for case in tests["tests"]:
        for series in case["input_series"]:
            name = re.match(r"\s*([a-zA-Z_:][\w:]*)", series["series"])
            assert name, series["series"]
            if name.group(1) in PROMETHEUS_BUILTINS:
                continue
            _check_expr(series["series"], series_labels, f"alerts_test {case['name']!r}")


# ---------------------------------------------------------------------------------------------------------
# compose, Prometheus, Grafana agree


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = _load_yaml_docs(COMPOSE)[0]
    return data


def _flag(command: list[str], flag: str) -> str | None:
    return command[command.index(flag) + 1] if flag in command else None


WORKERS = ("worker-1", "worker-2", "worker-3")


@pytest.mark.timeout(60)
def test_compose_services() -> None:
    compose = _compose()
    services = compose["services"]
    expected = {"redis", "arena-api", *WORKERS, "web", "archiver", "bot-random", "bot-heuristic", "bot-node"}
    assert expected | {"prometheus", "grafana"} <= set(services)
    # Every image is the one built here (make image); Grafana's alone comes from a registry, in its profile.
    for name, service in services.items():
        assert service["image"] == "pilotta-arena:local" or service.get("profiles") == ["grafana"], name
        assert "build" not in service, f"{name}: make image builds the image (deploy/docker/image.sh)"
    assert "ports" not in services["redis"], "Redis must not be published"
    assert services["redis"]["networks"] == ["backend"] and compose["networks"]["backend"]["internal"] is True
    assert "container_name" not in services["worker-1"], "a fixed container name prevents two deployments"

    api, web = (services[s]["command"] for s in ("arena-api", "web"))
    assert api[0] == "api" and _flag(api, "--port") == "50051" and _flag(api, "--metrics-port") == "9100"
    assert web[0] == "web" and _flag(web, "--port") == "8080"
    for command in (api, web, *(services[w]["command"] for w in WORKERS)):
        assert _flag(command, "--redis") == "redis://redis:6379/0"

    assert services["bot-random"]["entrypoint"] == ["python", "-m", "sample_bots.random"]
    assert services["bot-heuristic"]["entrypoint"] == ["python", "-m", "sample_bots.heuristic"]
    assert services["bot-node"]["entrypoint"] == ["node", "sample_bots/node/bot.js"]
    ports = {_flag(services[b]["command"], "--port") for b in ("bot-random", "bot-heuristic", "bot-node")}
    assert ports == {"50061", "50062", "50063"}

    for name, service in services.items():
        for mapping in service.get("ports", []):
            assert str(mapping).startswith("127.0.0.1:"), f"{name} publishes {mapping} beyond loopback"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (COMPOSE.parent / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in (compose.get("volumes") or {}), f"{name}: undeclared volume {source}"


@pytest.mark.timeout(60)
def test_compose_workers_have_what_the_sandbox_needs_and_no_more() -> None:
    from arena.sandbox.needs import CAPABILITIES

    services = _compose()["services"]
    for name in WORKERS:
        worker = services[name]
        assert worker["command"][0] == "worker" and _flag(worker["command"], "--metrics-port") == "9101"
        # Root in the container's own user namespace, every capability dropped but the five the probe names.
        assert worker["user"] == "0" and worker["cap_drop"] == ["ALL"]
        assert {f"CAP_{c}" for c in worker["cap_add"]} == set(CAPABILITIES), name
        assert worker["security_opt"] == [
            "no-new-privileges:true",
            "seccomp=./docker/build/seccomp-worker.json",
            "systempaths=unconfined",
        ]
        env = worker["environment"]
        assert env["PILOTTA_SANDBOX_LIMITS"] == "rlimits" and env["PILOTTA_SANDBOX_UIDS"] == "20000-21023"
        # The system files held locked (arena.sandbox.resident): the rlimit, since CAP_IPC_LOCK in the
        # container's user namespace does not count; the default mode (lock: refuse uploads otherwise).
        assert worker["ulimits"] == {"memlock": -1} and "PILOTTA_SANDBOX_RESIDENT" not in env, name
        assert worker["networks"] == {"backend": {"aliases": ["worker"]}}, "only the internal network"
        assert "ports" not in worker and "volumes" not in worker
    # Nothing else gets the worker's privileges.
    for name, service in services.items():
        if name not in WORKERS:
            assert "cap_add" not in service and "security_opt" not in service, name
            assert str(service.get("user", "10001")) != "0", name


@pytest.mark.timeout(60)
def test_the_k8s_worker_has_what_the_compose_worker_proved() -> None:
    from arena.cli.worker import SANDBOX_HEALTH_SERVICE

    compose_worker = _compose()["services"]["worker-1"]
    deployment = _by_kind(_k8s_objects(), "Deployment")["arena-worker"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["hostUsers"] is False, "root in the pod's own user namespace only"
    assert pod["securityContext"]["runAsUser"] == 0 and pod["securityContext"]["runAsNonRoot"] is False
    profile = pod["securityContext"]["seccompProfile"]
    assert profile == {"type": "Localhost", "localhostProfile": "pilotta-arena/seccomp-worker.json"}
    assert compose_worker["security_opt"][1] == "seccomp=./docker/build/seccomp-worker.json"
    context = container["securityContext"]
    assert context["procMount"] == "Unmasked" and context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"], "add": compose_worker["cap_add"]}
    env = {e["name"]: e["value"] for e in container["env"]}
    for name in ("PILOTTA_SANDBOX_UIDS", "PILOTTA_SANDBOX_LIMITS"):
        assert env[name] == compose_worker["environment"][name], name
    assert env["PILOTTA_SANDBOX_RESIDENT"] == "lock", "the system files locked, as in compose (its default)"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/tmp", "/run/pilotta-sandbox-uids"} <= mounts, "a read-only root: the sandbox's writable places"
    assert container["readinessProbe"]["grpc"]["service"] == SANDBOX_HEALTH_SERVICE
    assert compose_worker["environment"]["HEALTH_SERVICE"] == SANDBOX_HEALTH_SERVICE


@pytest.mark.timeout(60)
def test_compose_runs_one_archiver_writing_the_archive_the_api_and_web_read() -> None:
    compose = _compose()
    services = compose["services"]
    archiver = services["archiver"]
    assert archiver["command"][0] == "archive" and _flag(archiver["command"], "--redis") == "redis://redis:6379/0"
    assert "--once" not in archiver["command"], "the archiver must keep passing, not stop after one pass"
    assert archiver.get("deploy", {}).get("replicas", 1) == 1
    directory = _flag(archiver["command"], "--dir")
    assert f"archive:{directory}" in archiver["volumes"], "the archiver writes the shared volume"
    for name in ("arena-api", "web"):
        assert services[name]["environment"]["ARENA_ARCHIVE_DIR"] == directory, name
        assert f"archive:{directory}:ro" in services[name]["volumes"], f"{name} reads the archive, read-only"
    assert "archive" in compose["volumes"]
    assert not set(WORKERS) & {n for n, s in services.items() if any("archive:" in v for v in s.get("volumes", []))}


@pytest.mark.timeout(60)
def test_k8s_runs_one_archiver_on_a_shared_claim_the_api_and_web_read() -> None:
    objects = _k8s_objects()
    claim = _by_kind(objects, "PersistentVolumeClaim")["arena-archive"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"], "three Deployments mount it"
    deployments = _by_kind(objects, "Deployment")
    archiver = deployments["arena-archiver"]
    assert archiver["spec"]["replicas"] == 1 and archiver["spec"]["strategy"]["type"] == "Recreate"

    def archive_mount(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
        pod = deployments[name]["spec"]["template"]["spec"]
        (volume,) = [
            v for v in pod["volumes"] if v.get("persistentVolumeClaim", {}).get("claimName") == "arena-archive"
        ]
        container = pod["containers"][0]
        (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
        return container, mount

    container, mount = archive_mount("arena-archiver")
    assert container["args"][0] == "archive" and "--once" not in container["args"]
    assert _flag(container["args"], "--dir") == mount["mountPath"] and not mount.get("readOnly")
    for name in ("arena-api", "arena-web"):
        container, mount = archive_mount(name)
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        assert env["ARENA_ARCHIVE_DIR"] == mount["mountPath"] and mount["readOnly"], name
    policy = _by_kind(objects, "NetworkPolicy")["redis-clients-only"]
    allowed = policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchExpressions"][0]["values"]
    component = archiver["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
    assert component in allowed, "the archiver must reach Redis"


@pytest.mark.timeout(60)
def test_prometheus_scrapes_what_compose_runs() -> None:
    config = _load_yaml_docs(PROMETHEUS_DIR / "prometheus.yml")[0]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    services = _compose()["services"]
    api_port = _flag(services["arena-api"]["command"], "--metrics-port")
    worker_port = _flag(services["worker-1"]["command"], "--metrics-port")
    assert f"arena-api:{api_port}" in jobs["pilotta-api"]["static_configs"][0]["targets"]
    dns = jobs["pilotta-workers"]["dns_sd_configs"][0]
    assert dns["names"] == ["worker"] and str(dns["port"]) == worker_port
    for pattern in jobs["pilotta-workers-remote"]["file_sd_configs"][0]["files"]:
        matches = list(PROMETHEUS_DIR.glob(pattern))
        assert matches, f"file_sd pattern {pattern} matches no file"
        for path in matches:
            assert isinstance(json.loads(path.read_text()), list)
    assert all((PROMETHEUS_DIR / f).is_file() for f in config["rule_files"])

    grafana_mounts = services["grafana"]["volumes"]
    provider = _load_yaml_docs(GRAFANA / "provisioning" / "dashboards" / "dashboards.yml")[0]
    path = provider["providers"][0]["options"]["path"]
    assert f"./grafana/dashboards:{path}:ro" in grafana_mounts
    assert "./prometheus:/etc/prometheus:ro" in services["prometheus"]["volumes"]
    datasources = _load_yaml_docs(GRAFANA / "provisioning" / "datasources" / "prometheus.yml")[0]
    assert datasources["datasources"][0]["url"] == "http://prometheus:9090"


@pytest.mark.timeout(60)
def test_dockerfile() -> None:
    text = (REPO / "Dockerfile").read_text()
    # Built here, from the debootstrap base (deploy/docker/base.sh), with no registry: no BuildKit frontend
    # to fetch, the Python packages from the wheelhouse only.
    assert re.search(r"^ARG BASE_IMAGE=pilotta-arena-base:bookworm$", text, re.M)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}\s*$", text, re.M)
    assert not re.search(r"^# *syntax=", text, re.M)
    assert "PIP_NO_INDEX=1" in text and re.search(r"pip install --find-links /wheels --no-deps \.", text)
    base = (DEPLOY / "docker" / "base.sh").read_text()
    (packages,) = re.findall(r"^packages=(\S+)$", base, re.M)
    assert {"python3", "python3-venv", "bubblewrap", "nodejs", "redis-server", "prometheus"} <= set(packages.split(","))
    assert re.search(r'^ENTRYPOINT \["arena"\]$', text, re.M)
    assert re.search(r"^USER (?!root)\w+", text, re.M), "the image must not run as root"


# ---------------------------------------------------------------------------------------------------------
# Kubernetes


def _k8s_objects() -> list[dict[str, Any]]:
    kustomization = _load_yaml_docs(K8S / "kustomization.yaml")[0]
    objects: list[dict[str, Any]] = []
    for resource in kustomization["resources"]:
        path = K8S / resource
        assert path.is_file(), f"kustomization lists missing {resource}"
        objects.extend(_load_yaml_docs(path))
    listed = {K8S / r for r in kustomization["resources"]}
    unlisted = {p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml"} - listed
    assert not unlisted, f"manifests not in kustomization.yaml: {sorted(p.name for p in unlisted)}"
    return objects


def _by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.mark.timeout(60)
def test_k8s_workloads_and_services_agree() -> None:
    objects = _k8s_objects()
    for obj in objects:
        assert {"apiVersion", "kind", "metadata"} <= set(obj), obj
    workloads = {**_by_kind(objects, "Deployment"), **_by_kind(objects, "StatefulSet")}
    assert {"redis", "arena-api", "arena-worker", "bot-random", "bot-heuristic", "bot-node"} <= set(workloads)

    for name, workload in workloads.items():
        selector = workload["spec"]["selector"]["matchLabels"]
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items(), f"{name}: selector doesn't match its pod labels"

    for name, service in _by_kind(objects, "Service").items():
        selector = service["spec"]["selector"]
        targets = [
            w for w in workloads.values() if selector.items() <= w["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert targets, f"Service {name} selects no workload"
        container_ports = {
            p.get("name")
            for w in targets
            for c in w["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        }
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            if isinstance(target, str):
                assert target in container_ports, f"Service {name}: no container port named {target}"

    redis = _by_kind(objects, "StatefulSet")["redis"]
    assert redis["spec"]["volumeClaimTemplates"], "Redis needs a PersistentVolumeClaim"

    worker = workloads["arena-worker"]["spec"]["template"]["spec"]["containers"][0]
    assert worker["args"][0] == "worker"
    for probe in ("readinessProbe", "livenessProbe"):
        assert worker[probe]["grpc"]["port"] == 50052, probe
    annotations = workloads["arena-worker"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == _flag(worker["args"], "--metrics-port") == "9101"
    api = workloads["arena-api"]["spec"]["template"]["spec"]["containers"][0]
    api_annotations = workloads["arena-api"]["spec"]["template"]["metadata"]["annotations"]
    assert api_annotations["prometheus.io/port"] == _flag(api["args"], "--metrics-port") == "9100"

    hpa = next(iter(_by_kind(objects, "HorizontalPodAutoscaler").values()))
    assert hpa["spec"]["scaleTargetRef"]["name"] == "arena-worker"
    assert "prometheus-config" in _by_kind(objects, "ConfigMap")
    assert "pilotta-arena" in _by_kind(objects, "Namespace")


def _kustomize(kubectl: str, directory: Path) -> list[dict[str, Any]]:
    """The documents ``kubectl kustomize DIRECTORY`` builds (it must build)."""
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    return [d for d in _yaml().safe_load_all(result.stdout) if d]


@pytest.mark.timeout(120)
def test_kustomize_builds() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed: kustomize build not checked (YAML checked above)")
    docs = _kustomize(kubectl, K8S)
    assert all(d["metadata"].get("namespace") == "pilotta-arena" for d in docs if d["kind"] != "Namespace")


# ---------------------------------------------------------------------------------------------------------
# the Redis password: mounted secret files only


SECRET_FILE_COMPOSE = "/run/secrets/redis-password"
SECRET_FILE_K8S = "/run/secrets/redis/password"


@pytest.mark.timeout(60)
def test_compose_passes_the_redis_password_as_a_secret_file_only() -> None:
    compose = _compose()
    services = compose["services"]
    assert compose["secrets"]["redis-password"]["file"] == "./secrets/redis-password"
    for name in ("arena-api", *WORKERS, "web", "archiver"):
        command = services[name]["command"]
        assert _flag(command, "--redis-password-file") == SECRET_FILE_COMPOSE, name
        assert "redis-password" in services[name]["secrets"], name
        assert not any("@" in arg for arg in command), f"{name}: a password in the Redis URL"
    redis = services["redis"]
    assert "redis-password" in redis["secrets"]
    assert f"requirepass $$(cat {SECRET_FILE_COMPOSE})" in " ".join(redis["command"])  # ($$: compose's escape)
    assert "--requirepass" not in " ".join(redis["command"])
    assert SECRET_FILE_COMPOSE in " ".join(redis["healthcheck"]["test"])
    for name in ("bot-random", "bot-heuristic", "bot-node"):
        assert services[name]["secrets"] == [], f"{name} must not get the Redis password"
    for name, service in services.items():
        env = service.get("environment") or {}
        assert not [k for k in env if "REDIS" in k.upper()], f"{name}: a Redis credential in the environment"


@pytest.mark.timeout(60)
def test_k8s_passes_the_redis_password_as_a_mounted_secret_only() -> None:
    objects = _k8s_objects()
    text = "\n".join(p.read_text() for p in K8S.glob("*.yaml"))
    assert "$(REDIS_PASSWORD)" not in text and "REDISCLI_AUTH" not in text
    workloads = {**_by_kind(objects, "Deployment"), **_by_kind(objects, "StatefulSet")}
    clients = set()
    for name, workload in workloads.items():
        pod = workload["spec"]["template"]["spec"]
        secret_volumes = {
            v["name"] for v in pod.get("volumes", []) if v.get("secret", {}).get("secretName") == "redis-auth"
        }
        for container in pod["containers"]:
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef", {})
                assert ref.get("name") != "redis-auth", f"{name}: the Redis password in the environment"
            mounts = {m["mountPath"] for m in container.get("volumeMounts", []) if m["name"] in secret_volumes}
            args = [str(a) for a in container.get("command", []) + container.get("args", [])]
            if name.startswith("bot-"):
                assert not mounts, f"{name}: a bot must not get the Redis password"
            elif name == "redis":
                assert mounts == {"/run/secrets/redis"} and f"$(cat {SECRET_FILE_K8S})" in " ".join(args)
            elif args and args[0] in ("api", "worker", "web", "archive"):
                assert mounts == {"/run/secrets/redis"}, name
                assert _flag(args, "--redis-password-file") == SECRET_FILE_K8S, name
                assert _flag(args, "--redis") == "redis://redis:6379/0", name
                clients.add(args[0])
        for volume in pod.get("volumes", []):
            if volume["name"] in secret_volumes:
                assert volume["secret"]["defaultMode"] & 0o007 == 0, f"{name}: the secret is world-readable"
    assert clients == {"api", "worker", "web", "archive"}


# ---------------------------------------------------------------------------------------------------------
# autoscaling: worker-hpa.yaml by default, KEDA's ScaledObject (deploy/k8s/keda, a component) instead

KEDA = K8S / "keda"
KNOWN_KINDS = {
    ("v1", "Namespace"), ("v1", "Service"), ("v1", "ConfigMap"), ("v1", "ServiceAccount"),
    ("v1", "PersistentVolumeClaim"), ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"), ("networking.k8s.io/v1", "NetworkPolicy"),
    ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("keda.sh/v1alpha1", "ScaledObject"), ("keda.sh/v1alpha1", "TriggerAuthentication"),
}  # fmt: skip


def _keda_objects() -> list[dict[str, Any]]:
    component = _load_yaml_docs(KEDA / "kustomization.yaml")[0]
    assert component["kind"] == "Component"
    return [doc for resource in component["resources"] for doc in _load_yaml_docs(KEDA / resource)]


def _unknown_kinds(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(o["apiVersion"], o["kind"]) for o in objects if (o["apiVersion"], o["kind"]) not in KNOWN_KINDS]


def _worker_autoscalers(objects: list[dict[str, Any]]) -> list[str]:
    return [
        f"{o['kind']}/{o['metadata']['name']}"
        for o in objects
        if o["kind"] in ("HorizontalPodAutoscaler", "ScaledObject")
        and o["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "arena-worker"}
    ]


def _redis_streams_trigger(scaled: dict[str, Any]) -> dict[str, Any]:
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "redis-streams"
    metadata: dict[str, Any] = trigger["metadata"]
    return {**metadata, "auth": trigger["authenticationRef"]["name"]}


def _check_scaled_object(objects: list[dict[str, Any]]) -> None:
    from arena.store import keys

    (scaled,) = _by_kind(objects, "ScaledObject").values()
    trigger = _redis_streams_trigger(scaled)
    assert trigger["stream"] == keys.MATCH_STREAM, "the stream the queue reads (arena/store/keys.py)"
    assert trigger["consumerGroup"] == keys.WORKER_GROUP, "the workers' consumer group"
    assert int(trigger["pendingEntriesCount"]) >= 1
    assert trigger["address"] == "redis.pilotta-arena.svc.cluster.local:6379"
    auth = _by_kind(objects, "TriggerAuthentication")[trigger["auth"]]
    assert auth["spec"]["secretTargetRef"] == [{"parameter": "password", "name": "redis-auth", "key": "password"}]


@pytest.mark.timeout(60)
def test_every_k8s_kind_and_api_version_is_known() -> None:
    objects = _k8s_objects() + _keda_objects()
    assert not _unknown_kinds(objects)
    planted = [{**objects[0], "apiVersion": "extensions/v1beta1", "kind": "Deployment"}]
    assert _unknown_kinds(planted) == [("extensions/v1beta1", "Deployment")]


@pytest.mark.timeout(60)
def test_the_scaled_object_reads_the_queue_the_code_uses() -> None:
    objects = _keda_objects()
    _check_scaled_object(objects)
    scaled = copy.deepcopy(_by_kind(objects, "ScaledObject")["arena-worker"])
    scaled["spec"]["triggers"][0]["metadata"]["stream"] = "pa:q:match"  # a planted typo
    with pytest.raises(AssertionError, match="the stream the queue reads"):
        _check_scaled_object([scaled, *_by_kind(objects, "TriggerAuthentication").values()])
    from arena.store import keys

    scaled["spec"]["triggers"][0]["metadata"].update(stream=keys.MATCH_STREAM, consumerGroup="worker")
    with pytest.raises(AssertionError, match="consumer group"):
        _check_scaled_object([scaled, *_by_kind(objects, "TriggerAuthentication").values()])


@pytest.mark.timeout(60)
def test_one_autoscaler_targets_the_workers() -> None:
    default = _k8s_objects()
    assert _worker_autoscalers(default) == ["HorizontalPodAutoscaler/arena-worker"]
    assert len(_worker_autoscalers(default + _keda_objects())) == 2, "the check sees both when both are there"
    # The component deletes the CPU HPA it replaces.
    (patch,) = _load_yaml_docs(KEDA / "kustomization.yaml")[0]["patches"]
    deleted = _yaml().safe_load(patch["patch"])
    assert deleted["$patch"] == "delete" and (deleted["kind"], deleted["metadata"]["name"]) == (
        "HorizontalPodAutoscaler",
        "arena-worker",
    )


@pytest.mark.timeout(60)
def test_k8s_secrets_referenced_exist_and_commands_are_cli_subcommands() -> None:
    from arena.cli.main import build_parser

    objects = _k8s_objects() + _keda_objects()
    # The one Secret the manifests use, made by hand before `kubectl apply` (deploy/README.md says how).
    documented = set(re.findall(r"create secret generic ([\w-]+)", (DEPLOY / "README.md").read_text()))
    text = "\n".join(p.read_text() for p in [*K8S.glob("*.yaml"), *KEDA.glob("*.yaml")])
    referenced = set(re.findall(r"secretName: ([\w-]+)", text)) | {
        ref["name"] for a in _by_kind(objects, "TriggerAuthentication").values() for ref in a["spec"]["secretTargetRef"]
    }
    assert referenced and referenced <= documented, f"Secrets nobody is told to create: {referenced - documented}"
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    commands = set(subparsers.choices)
    for name, workload in _by_kind(objects, "Deployment").items():
        for container in workload["spec"]["template"]["spec"]["containers"]:
            if container.get("image") == "pilotta-arena" and "command" not in container:
                assert container["args"][0] in commands, f"{name}: arena has no command {container['args'][0]}"
    assert "worker" in commands and "wrker" not in commands, "the planted misspelling would be caught"


@pytest.mark.timeout(120)
def test_kustomize_builds_with_the_keda_component(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed: kustomize build not checked (YAML checked above)")
    overlay = tmp_path / "k8s"
    shutil.copytree(K8S, overlay)
    with (overlay / "kustomization.yaml").open("a") as f:
        f.write("\ncomponents: [keda]\n")
    docs = _kustomize(kubectl, overlay)
    assert _worker_autoscalers(docs) == ["ScaledObject/arena-worker"], "the CPU HPA is deleted, KEDA's alone"
    _check_scaled_object(docs)
