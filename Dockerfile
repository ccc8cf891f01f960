# syntax=docker/dockerfile:1
#
# krag image: the `knowledge-rag-flow` distribution (console script `krag`) plus the
# locally served mermaid.js the UI needs. Default command: the Streamlit UI on :8501.
# The same image runs the LangGraph dev server (`langgraph dev`, see docker-compose.yml).
#
#   docker build -t krag .
#   docker run --rm -p 127.0.0.1:8501:8501 -e KRAG_DATABASE_URL=postgresql://... krag
#
# Configuration is only through KRAG_* environment variables (see .env.example).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG NODE_IMAGE=node:20-bookworm-slim

# ---------------------------------------------------------------------------------------
# mermaid.js: fetched from the npm registry by npm (which checks the tarball against the
# registry's integrity hash), then checked again against the hash pinned here.
# Keep MERMAID_VERSION / MERMAID_INTEGRITY in step with what the local build installs
# into ui/static/mermaid/ (`npm view mermaid@<version> dist.integrity`).
# ---------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS mermaid
ARG MERMAID_VERSION=11.17.2
ARG MERMAID_INTEGRITY=sha512-V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQxULMa80/qt5gHO73aCleBBg==
WORKDIR /build
RUN set -eux; \
    npm pack "mermaid@${MERMAID_VERSION}" --json > pack.json; \
    node -e ' \
      const fs = require("fs"), crypto = require("crypto"); \
      const [file, want] = process.argv.slice(1); \
      const got = "sha512-" + crypto.createHash("sha512").update(fs.readFileSync(file)).digest("base64"); \
      if (got !== want) { console.error(`integrity mismatch for ${file}: ${got} != ${want}`); process.exit(1); }' \
      "mermaid-${MERMAID_VERSION}.tgz" "${MERMAID_INTEGRITY}"; \
    mkdir -p node_modules/mermaid; \
    tar -xzf "mermaid-${MERMAID_VERSION}.tgz" -C node_modules/mermaid --strip-components=1; \
    test -s node_modules/mermaid/dist/mermaid.min.js; \
    test -s node_modules/mermaid/LICENSE

# ---------------------------------------------------------------------------------------
# Runtime image
# ---------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}

# 1 = also install langgraph-cli[inmem], so `langgraph dev` works (langgraph service).
ARG WITH_LANGGRAPH_CLI=1
ARG LANGGRAPH_CLI_SPEC="langgraph-cli[inmem]>=0.4.40"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    STREAMLIT_SERVER_HEADLESS=true \
    KRAG_DATA_DIR=/data

RUN groupadd --system --gid 10001 krag \
 && useradd --system --uid 10001 --gid krag --home-dir /home/krag --create-home \
        --shell /usr/sbin/nologin krag

WORKDIR /app

# Dependencies first (from pyproject.toml alone), so editing the source does not
# reinstall them.
COPY pyproject.toml ./
RUN set -eux; \
    python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
        > /tmp/requirements.txt; \
    if [ "${WITH_LANGGRAPH_CLI}" = "1" ]; then echo "${LANGGRAPH_CLI_SPEC}" >> /tmp/requirements.txt; fi; \
    pip install -r /tmp/requirements.txt; \
    rm /tmp/requirements.txt

# The project itself. The source tree stays in /app: langgraph.json points at
# ./graph_flows/*/graph.py relative to it.
COPY . .
COPY --from=mermaid /build/node_modules/mermaid/dist/mermaid.min.js \
                    /build/node_modules/mermaid/LICENSE \
                    ./ui/static/mermaid/
# After installing: mermaid also goes next to the installed ui package, for code that
# resolves static files from ui/__file__ (a no-op once pyproject's package-data ships
# ui/static/mermaid/*); /app itself is made writable because `langgraph dev` keeps its
# state in ./.langgraph_api.
RUN set -eux; \
    pip install .; \
    if [ "${WITH_LANGGRAPH_CLI}" = "1" ]; then langgraph --version; fi; \
    site="$(cd / && python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"; \
    if [ -d "${site}/ui" ]; then \
        mkdir -p "${site}/ui/static/mermaid"; \
        cp -n ui/static/mermaid/mermaid.min.js ui/static/mermaid/LICENSE "${site}/ui/static/mermaid/"; \
    fi; \
    krag --help > /dev/null; \
    mkdir -p /data; \
    chown krag:krag /data /app

USER krag

EXPOSE 8501
# LangGraph dev server (only when run with `langgraph dev ... --port 2024`)
EXPOSE 2024

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status == 200 else 1)"]

CMD ["krag", "ui", "--host", "0.0.0.0", "--port", "8501"]
