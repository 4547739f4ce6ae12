"""Page-cache helpers of the revlog peer (standard library only).

    pagecache.py evict FILE...
    pagecache.py resident FILE...
    pagecache.py time-log HG REPO N SIZE|none RUNS changelog|store

Residency is read with mincore(2) on a fresh read-only mapping (which
touches no page) and cachestat(2) where the kernel has it (6.5 and later).
"""

import ctypes
import glob
import mmap
import os
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_libc.syscall.restype = ctypes.c_long

PAGE = os.sysconf("SC_PAGE_SIZE")
NR_CACHESTAT = 451  # the same number on x86_64 and aarch64


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Cachestat(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in
                ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")]


def evict(path):
    """Write the file back (dirty pages cannot be dropped), then drop it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def mincore_pages(path):
    """(resident pages, pages) of the file."""
    size = os.path.getsize(path)
    if size == 0:
        return 0, 0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    finally:
        os.close(fd)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap " + path)
    try:
        pages = (size + PAGE - 1) // PAGE
        vec = (ctypes.c_ubyte * pages)()
        if _libc.mincore(addr, size, vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore " + path)
        return sum(v & 1 for v in vec), pages
    finally:
        _libc.munmap(addr, size)


def cachestat(path):
    """The kernel's cachestat of the whole file, or None without it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        whole, stat = _Range(0, 0), _Cachestat()
        rc = _libc.syscall(ctypes.c_long(NR_CACHESTAT), ctypes.c_uint(fd),
                           ctypes.byref(whole), ctypes.byref(stat), ctypes.c_uint(0))
        return stat if rc == 0 else None
    finally:
        os.close(fd)


def cmd_evict(paths):
    for p in paths:
        evict(p)
        resident, pages = mincore_pages(p)
        print(f"evicted {p}: {resident}/{pages} pages resident after DONTNEED")


def cmd_resident(paths):
    for p in paths:
        resident, pages = mincore_pages(p)
        cs = cachestat(p)
        if cs is None:
            said = "cachestat unavailable"
        else:
            said = (f"cachestat nr_cache={cs.nr_cache} dirty={cs.nr_dirty} "
                    f"wb={cs.nr_writeback} evicted={cs.nr_evicted} "
                    f"recently_evicted={cs.nr_recently_evicted}")
        print(f"{p}: mincore {resident}/{pages} pages; {said}")


def _mmap_config(threshold):
    """hg's --config flags for "mmap an index of at least `threshold`"."""
    if threshold == "none":
        return ["--config", "storage.revlog.mmap.index=no"]
    return ["--config", f"experimental.mmapindexthreshold={threshold}",
            "--config", "storage.revlog.mmap.index=yes",
            "--config", f"storage.revlog.mmap.index:size-threshold={threshold}"]


def cmd_time_log(hg, repo, n, size, runs, which):
    """`hg log -l N` read (no mmap) and, unless SIZE is none, mapped at
    threshold SIZE; each warm and cold (the changelog, or changelog and
    manifest, evicted before every run, and checked gone). One discarded
    run first; every output must be the same."""
    runs = int(runs)
    store = os.path.join(repo, ".hg", "store")
    patterns = ["00changelog.*"] if which == "changelog" else ["00changelog.*", "00manifest.*"]
    files = sorted(f for pattern in patterns for f in glob.glob(os.path.join(store, pattern)))
    index = os.path.join(store, "00changelog.i")
    print(f"repo={repo} N={n} 00changelog.i={os.path.getsize(index)} bytes, evicting: "
          + ", ".join(os.path.basename(f) for f in files))

    modes = [("read", "none")]
    if size != "none":
        modes.append((f"mmap>={size}", size))
    log = [hg, "-R", repo, "log", "-l", n, "-T", "{rev}\n"]
    first_output = None
    for label, threshold in modes:
        for cache in ("warm", "cold"):
            times = []
            for run in range(runs + 1):
                if cache == "cold":
                    for f in files:
                        evict(f)
                    resident, pages = mincore_pages(index)
                    if resident:
                        sys.exit(f"time-log: eviction failed: {resident}/{pages} pages "
                                 "of 00changelog.i still resident")
                t0 = time.perf_counter()
                out = subprocess.run(log + _mmap_config(threshold), check=True,
                                     capture_output=True).stdout
                ms = (time.perf_counter() - t0) * 1000.0
                if first_output is None:
                    first_output = out
                if out != first_output:
                    sys.exit("time-log: hg's output differs between runs")
                if run:  # the first run only warms up
                    times.append(ms)
            sd = statistics.stdev(times) if len(times) > 1 else 0.0
            print(f"{label:>14} {cache:>4}: mean {statistics.mean(times):8.1f} ms  "
                  f"min {min(times):8.1f}  max {max(times):8.1f}  sd {sd:6.1f}  (runs={runs})")
    resident, pages = mincore_pages(index)
    print(f"after last run: 00changelog.i {resident}/{pages} pages resident")


def main(argv):
    if argv[:1] == ["evict"]:
        cmd_evict(argv[1:])
    elif argv[:1] == ["resident"]:
        cmd_resident(argv[1:])
    elif argv[:1] == ["time-log"] and len(argv) == 7:
        cmd_time_log(*argv[1:])
    else:
        sys.exit("usage: pagecache.py evict|resident FILE... | "
                 "time-log HG REPO N SIZE RUNS changelog|store")


if __name__ == "__main__":
    main(sys.argv[1:])
