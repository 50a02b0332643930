"""Everything under deploy/ parses, and refers only to what exists.

- every YAML/JSON file under deploy/ (compose included) parses;
- the Grafana dashboard and the alert rules query only metric names that arena/metrics.py defines (read
  from a fresh registry), with only the labels those metrics have: renaming a metric or a label without
  updating deploy/ fails here;
- compose, Prometheus, Grafana and Kubernetes files agree with each other (ports, names, mounts).
"""

from __future__ import annotations

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


def _deploy_files(*suffixes: str) -> Iterator[Path]:
    for path in sorted(DEPLOY.rglob("*")):
        if path.is_file() and path.suffix in suffixes:
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
    from arena.bots.registry import SUSPEND_AFTER
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


@pytest.mark.timeout(60)
def test_compose_services() -> None:
    services = _compose()["services"]
    expected = {"redis", "arena-api", "worker", "web", "bot-random", "bot-heuristic", "bot-node"}
    assert expected | {"prometheus", "grafana"} <= set(services)
    assert services["redis"]["image"].startswith("redis:7")
    assert "ports" not in services["redis"], "Redis must not be published"
    assert services["worker"]["deploy"]["replicas"] == 3
    assert "container_name" not in services["worker"], "a fixed container name prevents replicas"

    api, worker, web = (services[s]["command"] for s in ("arena-api", "worker", "web"))
    assert api[0] == "api" and _flag(api, "--port") == "50051" and _flag(api, "--metrics-port") == "9100"
    assert worker[0] == "worker" and _flag(worker, "--metrics-port") == "9101"
    assert web[0] == "web" and _flag(web, "--port") == "8080"
    for command in (api, worker, web):
        assert _flag(command, "--redis") == "redis://redis:6379/0"

    assert services["bot-random"]["entrypoint"] == ["python", "-m", "sample_bots.random"]
    assert services["bot-heuristic"]["entrypoint"] == ["python", "-m", "sample_bots.heuristic"]
    assert services["bot-node"]["entrypoint"] == ["node", "sample_bots/node/bot.js"]
    ports = {_flag(services[b]["command"], "--port") for b in ("bot-random", "bot-heuristic", "bot-node")}
    assert ports == {"50061", "50062", "50063"}

    for name, service in services.items():
        for mapping in service.get("ports", []):
            assert str(mapping).startswith("127.0.0.1:"), f"{name} publishes {mapping} beyond loopback"
        if "build" in service:
            assert (COMPOSE.parent / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (COMPOSE.parent / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in (_compose().get("volumes") or {}), f"{name}: undeclared volume {source}"


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
    assert "worker" not in [n for n, s in services.items() if any("archive:" in v for v in s.get("volumes", []))]


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
    worker_port = _flag(services["worker"]["command"], "--metrics-port")
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
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim$", text, re.M)
    assert re.search(r"^FROM \$\{PYTHON_IMAGE\}\s*$", text, re.M)
    assert "pip install" in text and re.search(r"pip install (--no-deps )?\.", text)
    assert "nodejs" in text
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


@pytest.mark.timeout(120)
def test_kustomize_builds() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed: kustomize build not checked (YAML checked above)")
    result = subprocess.run(
        [kubectl, "kustomize", str(K8S)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    docs = [d for d in _yaml().safe_load_all(result.stdout) if d]
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
    for name in ("arena-api", "worker", "web", "archiver"):
        command = services[name]["command"]
        assert _flag(command, "--redis-password-file") == SECRET_FILE_COMPOSE, name
        assert "redis-password" in services[name]["secrets"], name
        assert not any("@" in arg for arg in command), f"{name}: a password in the Redis URL"
    redis = services["redis"]
    assert "redis-password" in redis["secrets"]
    assert f"requirepass $(cat {SECRET_FILE_COMPOSE})" in " ".join(redis["command"])
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
