#!/usr/bin/env bash
# One harness journey for tests/mcp.rs: `pond mcp install` registers pond with the real harness
# CLI, which is then run non-interactively against the scripted model (mcp_model.py) on
# 127.0.0.1; the model calls pond's search tool, the harness runs `pond mcp` and sends the
# result back. Run it in a network namespace that has only loopback (tests/mcp.rs starts it
# with `unshare -rn`), so nothing leaves the machine.
#
#   mcp_harness.sh HARNESS POND STORE WORK CLI QUERY
#
# HARNESS is claude-code, codex or opencode; POND the binary; STORE the store; WORK an empty
# folder (the harness's home and configuration, model.jsonl with every request the model got,
# harness.out / harness.err, install.out); CLI the harness's executable. Each harness finds
# its user configuration through its own variable (CLAUDE_CONFIG_DIR, CODEX_HOME,
# XDG_CONFIG_HOME), set here to a folder under WORK, so `pond mcp install` is run with it too.
# Exit status: the harness's.
set -u
harness=$1 pond=$2 store=$3 work=$4 cli=$5 query=$6
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The namespace's loopback starts down.
if command -v ip >/dev/null 2>&1; then
  ip link set lo up
else
  python3 - <<'PY'
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
req = struct.pack("16sH", b"lo", 0)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, req))[1]  # SIOCGIFFLAGS
fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP
PY
fi

mkdir -p "$work/home" "$work/project" "$work/tmp"
python3 "$here/mcp_model.py" "$work/model.jsonl" "$work/port" "$query" &
model=$!
trap 'kill $model 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "the scripted model did not start" >&2; exit 97; }
port=$(cat "$work/port")

base=(env -i PATH="$PATH" HOME="$work/home" TERM=dumb LANG=C.UTF-8 TMPDIR="$work/tmp")
install() {  # `pond mcp install` as the user would run it, with the harness's variable set
  "${base[@]}" "$@" POND_CONFIG="$work/no-config.toml" \
    "$pond" mcp install --for "$harness" --data "$store" >"$work/install.out" 2>&1 \
    || { cat "$work/install.out" >&2; exit 98; }
}

cd "$work/project"
case "$harness" in
  claude-code)
    cfg="$work/claude-config"
    mkdir -p "$cfg"
    install CLAUDE_CONFIG_DIR="$cfg"
    "${base[@]}" CLAUDE_CONFIG_DIR="$cfg" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" \
      ANTHROPIC_API_KEY=sk-ant-pond-test CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
      DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
      timeout 120 "$cli" -p "Find my earlier session about this." --model mock-model \
      --allowedTools mcp__pond__pond_search --output-format json \
      </dev/null >"$work/harness.out" 2>"$work/harness.err"
    ;;
  codex)
    codex_home="$work/codex-home"
    mkdir -p "$codex_home"
    cat >"$codex_home/config.toml" <<EOF
model = "mock-model"
model_provider = "loopback"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.loopback]
name = "loopback"
base_url = "http://127.0.0.1:$port/v1"
wire_api = "responses"
env_key = "LOOPBACK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
EOF
    install CODEX_HOME="$codex_home"
    "${base[@]}" CODEX_HOME="$codex_home" LOOPBACK_API_KEY=pond-test \
      timeout 120 "$cli" exec --skip-git-repo-check "Find my earlier session about this." \
      </dev/null >"$work/harness.out" 2>"$work/harness.err"
    ;;
  opencode)
    xdg="$work/xdg"
    mkdir -p "$xdg/config/opencode" "$xdg/data" "$xdg/cache" "$xdg/state"
    cat >"$xdg/config/opencode/opencode.json" <<EOF
{ "autoupdate": false, "share": "disabled", "model": "mock/mock-model",
  "provider": { "mock": { "npm": "@ai-sdk/openai-compatible", "name": "Mock",
    "options": { "baseURL": "http://127.0.0.1:$port/v1", "apiKey": "pond-test" },
    "models": { "mock-model": { "name": "Mock Model", "tool_call": true } } } } }
EOF
    install XDG_CONFIG_HOME="$xdg/config"
    "${base[@]}" XDG_CONFIG_HOME="$xdg/config" XDG_DATA_HOME="$xdg/data" \
      XDG_CACHE_HOME="$xdg/cache" XDG_STATE_HOME="$xdg/state" OPENCODE_DISABLE_AUTOUPDATE=1 \
      OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_SHARE=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 \
      OPENCODE_DISABLE_DEFAULT_PLUGINS=1 \
      timeout 120 "$cli" run -m mock/mock-model "Find my earlier session about this." \
      </dev/null >"$work/harness.out" 2>"$work/harness.err"
    ;;
  *)
    echo "unknown harness $harness" >&2
    exit 2
    ;;
esac
