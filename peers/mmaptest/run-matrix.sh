#!/usr/bin/env bash
# Builds every mmaptest variant into BUILD_DIR and runs the matrix there.
#
#   run-matrix.sh BUILD_DIR warm [ITERS]      one 72 KiB file in the page
#                                             cache, ITERS (100000) passes,
#                                             best of 3 runs per variant
#   run-matrix.sh BUILD_DIR cold NFILES MIB   NFILES files of MIB MiB, evicted
#                                             from the page cache, one pass
#
# BUILD_DIR receives the binaries and the input files: use a scratch
# directory outside the repository. CC picks the compiler (cc; Debian's gcc
# is installed when there is none). One line per variant on stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage="usage: run-matrix.sh BUILD_DIR warm [ITERS] | BUILD_DIR cold NFILES MIB"
out=${1:?$usage}
what=${2:?$usage}
CC=${CC:-cc}

say() { echo "run-matrix: $*" >&2; }

# ensure_tool TOOL PACKAGE: apt-get install PACKAGE unless TOOL is on PATH.
# As root or through `sudo -n`; one install at a time on this machine (the
# same lock file the test helpers take); the package lists are refreshed
# only when a first install attempt fails.
ensure_tool() {
    local tool=$1 package=$2
    command -v "$tool" >/dev/null 2>&1 && return 0
    local as_root=()
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 \
            || { say "need root or sudo to run: apt-get install $package"; exit 1; }
        as_root=(sudo -n)
    fi
    say "$tool not found, installing the Debian package '$package'"
    local lock="${TMPDIR:-/tmp}/mapwise-apt.lock"
    (
        if command -v flock >/dev/null 2>&1 && exec 9>>"$lock"; then flock 9; fi
        command -v "$tool" >/dev/null 2>&1 && exit 0
        export DEBIAN_FRONTEND=noninteractive
        local install=("${as_root[@]}" apt-get install -y -q --no-install-recommends "$package")
        "${install[@]}" >&2 \
            || { "${as_root[@]}" apt-get update -q >&2 && "${install[@]}" >&2; }
    ) || { say "could not install '$package' (apt-get install $package)"; exit 1; }
    command -v "$tool" >/dev/null 2>&1 || { say "$tool still missing after installing '$package'"; exit 1; }
}

# name:flags, as the benchmark harness names the binaries; each is also
# built with -DTOUCH as name+touch.
variants=(
    "read-1B:-DDEFAULT_READSIZE=1"
    "read-8K:-DDEFAULT_READSIZE=8192"
    "read-64K:-DDEFAULT_READSIZE=65536"
    "read-whole:-DDEFAULT_READSIZE=0"
    "mmap-per-iter:-DDO_MMAP"
    "mmap-per-iter+populate:-DDO_MMAP -DPOPULATE"
    "mmap-once:-DDO_MMAP -DDO_MMAP_ONCE"
)

[ "$CC" = cc ] && ensure_tool cc gcc
mkdir -p "$out"
for v in "${variants[@]}"; do
    name=${v%%:*}
    read -r -a flags <<<"${v#*:}"
    "$CC" -O2 -Wall "${flags[@]}" -o "$out/$name" "$here/mmaptest.c"
    "$CC" -O2 -Wall "${flags[@]}" -DTOUCH -o "$out/$name+touch" "$here/mmaptest.c"
done

# The wall= seconds of mmaptest's stderr line.
wall_of() { sed -n 's/.* wall=\([0-9.]*\) s .*/\1/p'; }

# Written back and dropped from the page cache (dd's nocache flag with no
# data is posix_fadvise(DONTNEED) of the whole file).
evict() {
    sync -- "$@"
    local f
    for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none; done
}

case $what in
    warm)
        iters=${3:-100000}
        file="$out/f72k"
        [ -f "$file" ] || head -c 73728 /dev/urandom >"$file"
        cat "$file" >/dev/null
        printf '%-26s %12s %12s\n' variant best_s us/iter
        for v in "${variants[@]}"; do
            name=${v%%:*}
            for touch in "" "+touch"; do
                n=$iters
                # one byte per read(): 73728 calls per pass, so 1/1000 of
                # the passes, scaled back up below
                if [ "$name" = read-1B ]; then n=$((iters / 1000)); [ "$n" -ge 1 ] || n=1; fi
                best=""
                for _ in 1 2 3; do
                    s=$("$out/$name$touch" -n "$n" "$file" 2>&1 >/dev/null | wall_of)
                    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
                        best=$s
                    fi
                done
                scaled=$(awk -v s="$best" -v n="$n" -v all="$iters" 'BEGIN { printf "%.3f", s * all / n }')
                per=$(awk -v s="$best" -v n="$n" 'BEGIN { printf "%.3f", s * 1e6 / n }')
                note=""
                [ "$n" = "$iters" ] || note="  (ran $n iters, scaled)"
                printf '%-26s %12s %12s%s\n' "$name$touch" "$scaled" "$per" "$note"
            done
        done
        ;;
    cold)
        nfiles=${3:?cold needs NFILES MIB}
        mib=${4:?cold needs NFILES MIB}
        files=()
        for ((i = 0; i < nfiles; i++)); do
            f="$out/cold$i.bin"
            if [ ! -f "$f" ] || [ "$(stat -c %s "$f")" -ne $((mib << 20)) ]; then
                head -c $((mib << 20)) /dev/urandom >"$f"
            fi
            files+=("$f")
        done
        printf '%-26s %10s %10s\n' variant wall_s GB/s
        for v in "${variants[@]}"; do
            name=${v%%:*}
            # one byte per read() of whole MiB files would take minutes
            [ "$name" = read-1B ] && continue
            evict "${files[@]}"
            line=$("$out/$name+touch" -n 1 "${files[@]}" 2>&1 >/dev/null)
            printf '%-26s %10s %10s\n' "$name+touch" "$(wall_of <<<"$line")" \
                "$(sed -n 's/.* \([0-9.]*\) GB\/s.*/\1/p' <<<"$line")"
        done
        ;;
    *)
        echo "$usage" >&2
        exit 2
        ;;
esac
