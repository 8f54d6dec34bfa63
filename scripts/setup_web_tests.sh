#!/usr/bin/env bash
# The browser tests' driver (web/test): puppeteer-core from npm, every package of its tree pinned by
# web/test/package-lock.json and checked against the lockfile's sha512 integrity by `npm ci`.
# No browser is downloaded: the tests drive Debian's chromium (scripts/setup.sh installs it).
# Installed into $WGC_DEPS/web-test (default <repo>/.deps/web-test); safe to run again, quiet when done.
# Without npm or a registry the browser tests skip, saying why; nothing here is needed to build wgc.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
deps=${WGC_DEPS:-$repo/.deps}
dest="$deps/web-test"
log() { printf '[setup_web_tests] %s\n' "$*" >&2; }

lock="$repo/web/test/package-lock.json"
stamp="$dest/.installed"
want=$(sha256sum "$repo/web/test/package.json" "$lock" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dest/node_modules/puppeteer-core" ]; then exit 0; fi

command -v npm >/dev/null || { log "npm not found: skipping (the browser tests will skip)"; exit 0; }
mkdir -p "$dest"
cp "$repo/web/test/package.json" "$lock" "$dest/"
log "installing puppeteer-core into $dest"
# PUPPETEER_SKIP_DOWNLOAD: belt and braces (puppeteer-core never downloads; scripts are off anyway).
(cd "$dest" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null) ||
  { log "npm ci failed: the browser tests will skip"; exit 0; }
printf '%s\n' "$want" >"$stamp"
