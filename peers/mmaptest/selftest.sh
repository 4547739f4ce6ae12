#!/usr/bin/env bash
# selftest.sh: builds every mmaptest variant (through run-matrix.sh, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/mapwise-peers/mmaptest/<source hash>/),
# runs a tiny warm and cold matrix, and checks what every variant delivers:
# the files' bytes, pass after pass, and the one stderr line harnesses parse.
# Ends with "N passed, M failed"; exit 1 on any failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
hash=$(cat "$here/mmaptest.c" "$here/run-matrix.sh" | sha256sum | cut -c1-12)
build="${XDG_CACHE_HOME:-$HOME/.cache}/mapwise-peers/mmaptest/$hash"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/mmaptest-selftest.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

passed=0 failed=0
check() { # NAME CONDITION-EXIT-STATUS [DETAIL]
    if [ "$2" = 0 ]; then
        echo "ok   $1"; passed=$((passed + 1))
    else
        echo "FAIL $1${3:+: $3}"; failed=$((failed + 1))
    fi
}

# run-matrix builds every variant; a tiny warm run and a tiny cold one.
rc=0
"$here/run-matrix.sh" "$build" warm 1000 >"$scratch/warm.txt" 2>"$scratch/err" || rc=$?
check "run-matrix warm builds and runs every variant" "$rc" "$(tail -3 "$scratch/err")"
rows=$(grep -cE '^[A-Za-z0-9+-]+ +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9]{3}' "$scratch/warm.txt" || true)
check "run-matrix warm: 14 rows of times" "$([ "$rows" = 14 ]; echo $?)" "$rows rows"
rc=0
"$here/run-matrix.sh" "$build" cold 1 1 >"$scratch/cold.txt" 2>"$scratch/err" || rc=$?
rows=$(grep -cE '^[A-Za-z0-9+-]+\+touch +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9]+$' "$scratch/cold.txt" || true)
check "run-matrix cold: 6 rows of times" "$([ "$rc" = 0 ] && [ "$rows" = 6 ]; echo $?)" \
    "rc $rc, $rows rows"

# Inputs: the 72 KiB file, a size that is neither a multiple of a page nor
# of 8 bytes, and an empty file.
cp "$build/f72k" "$scratch/f72k"
head -c 5001 /dev/urandom >"$scratch/odd"
: >"$scratch/empty"
one_pass() { cat "$scratch/f72k" "$scratch/odd"; }

for bin in "$build"/read-* "$build"/mmap-*; do
    variant=${bin##*/}
    case $variant in
        read-whole*) mode=read-whole-file ;;
        read-*) mode=read-chunked ;;
        mmap-once*) mode=mmap-once ;;
        mmap-*) mode=mmap-per-iteration ;;
    esac
    case $variant in
        *+touch) note="(touching data)" ;;
        *) note="(data not touched by user space in mmap modes)" ;;
    esac
    # one pass is 78729 read() calls for read-1B
    n=3; [ "${variant%+touch}" = read-1B ] && n=1
    for ((i = 0; i < n; i++)); do one_pass; done >"$scratch/want"
    rc=0
    "$bin" -n "$n" "$scratch/f72k" "$scratch/odd" >"$scratch/got" 2>"$scratch/line" || rc=$?
    check "$variant: $n passes of both files' bytes" \
        "$([ "$rc" = 0 ] && cmp -s "$scratch/got" "$scratch/want"; echo $?)"
    pattern="^$mode readsize=-?[0-9]+ files=2 bytes/iter=78729 iters=$n wall=[0-9.]+ s  [0-9.]+ us/iter  [0-9.]+ GB/s ${note//[()]/\\&}\$"
    check "$variant: the stderr line" "$(grep -qE "$pattern" "$scratch/line"; echo $?)" \
        "$(cat "$scratch/line")"
    rc=0
    "$bin" -n 2 "$scratch/empty" "$scratch/odd" >"$scratch/got" 2>"$scratch/line" || rc=$?
    case $mode in
        read-*)
            check "$variant: an empty file delivers nothing" \
                "$([ "$rc" = 0 ] && cmp -s "$scratch/got" <(cat "$scratch/odd" "$scratch/odd"); echo $?)" ;;
        *)
            check "$variant: an empty file cannot be mapped" \
                "$([ "$rc" = 1 ] && grep -q '^mmap: Invalid argument$' "$scratch/line"; echo $?)" \
                "rc $rc: $(cat "$scratch/line")" ;;
    esac
done

rc=0; "$build/read-64K" >/dev/null 2>"$scratch/line" || rc=$?
check "no file: usage, exit 2" "$([ "$rc" = 2 ] && grep -q '^usage: ' "$scratch/line"; echo $?)"
rc=0; "$build/mmap-once" -n 1 "$scratch/missing" >/dev/null 2>"$scratch/line" || rc=$?
check "a missing file: exit 1" "$([ "$rc" = 1 ] && grep -q 'No such file' "$scratch/line"; echo $?)"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
