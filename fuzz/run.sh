#!/usr/bin/env bash
# Runs every fuzz target for CHUNK seconds in turn, ROUNDS times, at the lowest priority, and
# appends each run's last status line to fuzz/runs.log. Usage: fuzz/run.sh [CHUNK] [ROUNDS] [TARGET...]
# Builds with cargo-fuzz on the stable toolchain (`cargo install cargo-fuzz`; RUSTC_BOOTSTRAP=1
# lets stable rustc take the sanitizer flags cargo-fuzz passes). Crashes, hangs (-timeout) and
# allocations over -rss_limit_mb are written to fuzz/artifacts/<target>/ and stop that run.
# While /tmp/pond-quiet exists (someone is benchmarking), it waits before each chunk.
set -uo pipefail
cd "$(dirname "$0")"
chunk=${1:-600}
rounds=${2:-1}
shift 2 2>/dev/null || shift $#
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(claude_code codex opencode_export opencode_db pi wire_events archive)
export RUSTC_BOOTSTRAP=1
# As `cargo fuzz run` sets it: SQLite, bundled and compiled into the binary twice over, is not
# an ODR violation of ours.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pond/fuzz-target}"
[ -d corpus ] || ./seed.sh
nice -n 19 cargo fuzz build -O --debug-assertions || exit 2
bin="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release"
for ((r = 1; r <= rounds; r++)); do
  for t in "${targets[@]}"; do
    while [ -e /tmp/pond-quiet ] && [ "$(cat /tmp/pond-quiet 2>/dev/null)" != fuzz ]; do sleep 60; done
    mkdir -p "corpus/$t" "artifacts/$t"
    start=$(date -u +%FT%TZ)
    nice -n 19 "$bin/$t" "corpus/$t" \
      -max_total_time="$chunk" -max_len=65536 -timeout=20 -rss_limit_mb=2048 \
      -artifact_prefix="artifacts/$t/" -print_final_stats=1 > "/tmp/pond-fuzz-$t.log" 2>&1
    code=$?
    stats=$(grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "/tmp/pond-fuzz-$t.log" | tr '\n' ' ')
    echo "$start $t ${chunk}s exit=$code $stats" >> runs.log
    if [ $code -ne 0 ]; then
      grep -E 'ERROR|panicked|SUMMARY|Test unit written' "/tmp/pond-fuzz-$t.log" | head -5 >> runs.log
    fi
  done
done
