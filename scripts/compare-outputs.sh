#!/bin/bash
# Two pond builds' conversions compared, for a change that must not change what pond writes:
#
#     scripts/compare-outputs.sh OLD_POND NEW_POND FROM INPUT...
#
# Converts each INPUT (a session file or folder of codec FROM) into each of the four targets
# with `--out DIR`, with one thread and with two (POND_THREADS), by both builds, and compares the
# written trees, stdout, stderr and exit code. Prints each conversion that differs and the count.
set -u
old=$1; new=$2; from=$3; shift 3
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
n=0; bad=0
for input in "$@"; do
  for to in claude-code pi opencode codex; do
    for threads in 1 2; do
      for b in old new; do
        bin=$old; [ $b = new ] && bin=$new
        rm -rf "$work/$b"; mkdir -p "$work/$b"
        POND_THREADS=$threads "$bin" convert --from "$from" --to $to "$input" --out "$work/$b/out" \
          > "$work/$b.stdout" 2> "$work/$b.stderr"
        echo $? > "$work/$b.rc"
      done
      n=$((n + 1))
      same=1
      # Both builds may write nothing (a source that is refused).
      if [ -e "$work/old/out" ] || [ -e "$work/new/out" ]; then
        diff -r "$work/old/out" "$work/new/out" > /dev/null 2>&1 || same=0
      fi
      for f in stdout stderr rc; do
        cmp -s "$work/old.$f" "$work/new.$f" || same=0
      done
      if [ $same = 0 ]; then
        bad=$((bad + 1)); echo "different: $input -> $to, POND_THREADS=$threads"
      fi
    done
  done
done
echo "$n conversions compared, $bad different"
[ $bad = 0 ]
