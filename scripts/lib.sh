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
}
