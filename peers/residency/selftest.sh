#!/usr/bin/env bash
# selftest.sh: builds resprobe (through ./resprobe, into the user's cache)
# and checks what it reports on a 1 MiB file it evicts, reads half of,
# populates and maps: the counts after each step, the counts of `map` and
# cachestat against each other, and against vmtouch's when vmtouch is there.
# Ends with "N passed, M failed"; exit 1 on any failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
probe="$here/resprobe"
# The file must live on a disk-backed file system (tmpfs pages cannot be
# evicted): the cache directory, beside the build.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mapwise-peers/residency"
mkdir -p "$cache"
scratch=$(mktemp -d "$cache/selftest.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
file="$scratch/1MiB"
page=$(getconf PAGESIZE)
pages=$(((1 << 20) / page))

passed=0 failed=0
check() { # NAME CONDITION-EXIT-STATUS [DETAIL]
    if [ "$2" = 0 ]; then
        echo "ok   $1"; passed=$((passed + 1))
    else
        echo "FAIL $1${3:+: $3}"; failed=$((failed + 1))
    fi
}
# field VALUE-REGEX TEXT: the first capture of the regex in the text
field() { sed -nE "s#.*$1.*#\\1#p" <<<"$2" | head -n 1 || true; }
mincore_of() { field "mincore: ([0-9]+)/$pages resident" "$1"; }
map_count() { field "^\\[.{64}\\] ([0-9]+)/$pages\$" "$("$probe" map "$file")"; }

rc=0; path=$("$probe" --path 2>"$scratch/err") || rc=$?
check "resprobe builds" "$rc" "$(tail -3 "$scratch/err")"
[ "$rc" = 0 ] || { echo "$passed passed, $failed failed"; exit 1; }

head -c $((1 << 20)) /dev/urandom >"$file"
sync -- "$file"

said=$("$probe" evict "$file")
check "evict: fadvise ok" "$(grep -qx 'posix_fadvise(DONTNEED) -> 0 (ok)' <<<"$said"; echo $?)" "$said"
check "evict: size and pages" \
    "$(grep -qx "$file: size=1048576 pages=$pages" <<<"$said"; echo $?)" "$said"
check "evict: no page resident" "$([ "$(mincore_of "$said")" = 0 ]; echo $?)" "$said"
if grep -q "cachestat: nr_cache=" <<<"$said"; then
    check "evict: cachestat counts none either" \
        "$(grep -q 'cachestat: nr_cache=0 nr_dirty=0 ' <<<"$said"; echo $?)" "$said"
else
    check "evict: cachestat says why it is missing" \
        "$(grep -qE 'cachestat: -1 [A-Z]' <<<"$said"; echo $?)" "$said"
fi
check "stat: three RWF_NOWAIT probes" \
    "$([ "$(grep -c 'preadv2(RWF_NOWAIT) @' <<<"$said")" = 3 ]; echo $?)"

# map changes nothing: two looks agree (stat's probes may have started
# read-ahead; map's count is whatever that left).
first=$(map_count)
check "map: a 64-column bar and a count" "$([ -n "$first" ]; echo $?)"
check "map: looking again changes nothing" "$([ "$(map_count)" = "$first" ]; echo $?)"

said=$("$probe" read "$file" 0.5)
check "read 0.5: half the bytes" \
    "$(grep -qE '^read 524288 of 1048576 bytes in [0-9.]+ ms$' <<<"$said"; echo $?)" "$said"
n=$(mincore_of "$said")
check "read 0.5: at least half the pages resident" \
    "$([ -n "$n" ] && [ "$n" -ge $((pages / 2)) ] && [ "$n" -le "$pages" ]; echo $?)" "$n"
bar=$("$probe" map "$file")
check "map after read: the first half solid" "$(grep -qE '^\[O{32}' <<<"$bar"; echo $?)" "$bar"
if command -v vmtouch >/dev/null 2>&1; then
    theirs=$(vmtouch "$file" | sed -nE 's/.*Resident Pages: ([0-9]+)\/.*/\1/p')
    check "map count = vmtouch's" "$([ "$(map_count)" = "$theirs" ]; echo $?)" \
        "$(map_count) vs $theirs"
fi
said=$("$probe" stat "$file")
if grep -q "cachestat: nr_cache=" <<<"$said"; then
    check "stat: cachestat nr_cache = mincore count" \
        "$([ "$(field 'nr_cache=([0-9]+)' "$said")" = "$(mincore_of "$said")" ]; echo $?)" "$said"
fi

"$probe" evict "$file" >/dev/null
said=$("$probe" populate "$file")
check "populate: every page resident" "$([ "$(mincore_of "$said")" = "$pages" ]; echo $?)" "$said"
check "map after populate: all solid" \
    "$([ "$("$probe" map "$file")" = "[$(printf 'O%.0s' $(seq 64))] $pages/$pages" ]; echo $?)"

"$probe" evict "$file" >/dev/null
said=$("$probe" populate-read "$file")
check "populate-read: ok and every page resident" \
    "$(grep -qE '^madvise\(MADV_POPULATE_READ\) -> 0 \(ok\)' <<<"$said" \
        && [ "$(mincore_of "$said")" = "$pages" ]; echo $?)" "$said"

"$probe" evict "$file" >/dev/null
said=$("$probe" willneed "$file")
check "willneed: reads start" \
    "$(grep -qE '^madvise\(MADV_WILLNEED\) -> 0 after' <<<"$said" \
        && [ "$(mincore_of "$said")" -gt 0 ]; echo $?)" "$said"

said=$("$probe" kpageflags "$file")
check "kpageflags: the first page's flags (or why not)" \
    "$(grep -qE '^pagemap entry=0x[0-9a-f]+ present=1 pfn=' <<<"$said" \
        && grep -qE '^(kpageflags=0x[0-9a-f]+:.* UPTODATE|pfn hidden)' <<<"$said"; echo $?)" "$said"

rc=0; "$path" >/dev/null 2>&1 || rc=$?
check "no arguments: exit 2" "$([ "$rc" = 2 ]; echo $?)"
rc=0; "$path" bogus "$file" >/dev/null 2>&1 || rc=$?
check "unknown command: exit 2" "$([ "$rc" = 2 ]; echo $?)"
rc=0; "$path" map "$scratch/missing" >/dev/null 2>&1 || rc=$?
check "missing file: exit 1" "$([ "$rc" = 1 ]; echo $?)"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
