#!/usr/bin/env bash
# Install the pinned mermaid.js (ui/package.json + ui/package-lock.json, integrity-checked by
# `npm ci`) into the git-ignored ui/static/mermaid/ the UI serves locally. Without npm: one
# line of advice and success, so `make setup` / `make test` keep working (the UI then shows
# diagram sources instead of rendered diagrams, and the browser test skips).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=ui/static/mermaid
if [ -s "$dest/mermaid.min.js" ] && [ -s "$dest/LICENSE" ] \
   && [ "$dest/mermaid.min.js" -nt ui/package-lock.json ]; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "note: npm not found; Mermaid diagrams will show as source (install npm, re-run make setup)"
    exit 0
fi
npm ci --prefix ui --no-audit --no-fund --loglevel=error
mkdir -p "$dest"
cp ui/node_modules/mermaid/dist/mermaid.min.js ui/node_modules/mermaid/LICENSE "$dest/"
echo "mermaid $(node -p 'require("./ui/node_modules/mermaid/package.json").version' 2>/dev/null || echo '?') installed into $dest"
