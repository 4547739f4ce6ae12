"""The seed's experiment: many small `updatev` calls on one file, timed.

`bench-updatev` starts one rrdtool process per call (what the seed
measured); `bench-inproc` makes the same calls through librrd's
rrd_update_r() in this process, so process start-up is left out. Both
feed the same sample stream (shapes.bench_calls), so a file updated by
either ends in the same bytes as mapwise's benchmark driver makes.

Both work on a copy in a fresh `$TMPDIR/rrd-bench-*` directory unless
told `--in-place` (bench-updatev only); the benchmark harness looks for
the in-process copy there to trace its residency.
"""

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import header
import tool
from shapes import bench_calls


def nearest_rank(sorted_values, q):
    """The q-quantile by nearest rank (the smallest value with at least a
    q share of the values at or below it)."""
    if not sorted_values:
        return float("nan")
    k = int(math.ceil(q * len(sorted_values))) - 1
    return sorted_values[min(len(sorted_values) - 1, max(0, k))]


def _facts(path):
    """(file size, ds_cnt, rra_cnt, step, last update) of an RRD."""
    h = header.decode_file(path)
    if "error" in h:
        raise SystemExit(h["error"])
    sh = h["stat_head"]
    return h["file_size"], sh["ds_cnt"], sh["rra_cnt"], sh["pdp_step"], h["live_head"]["last_up"]


def _scratch_copy(path):
    """(temporary directory, copy of `path` in it under the same name)."""
    d = tempfile.mkdtemp(prefix="rrd-bench-")
    copy = os.path.join(d, os.path.basename(path))
    shutil.copyfile(path, copy)
    return d, copy


def updatev(a):
    scratch = None
    if a.in_place:
        work = a.rrd
    else:
        scratch, work = _scratch_copy(a.rrd)
    size, ds_cnt, rra_cnt, step, last_up = _facts(work)
    d, name = tool.place(work)

    # The floor: process start-up, open and header read, nothing written.
    floor = []
    for _ in range(max(1, a.n // 10)):
        t0 = time.perf_counter()
        subprocess.run(["rrdtool", "last", name], cwd=d,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        floor.append(time.perf_counter() - t0)

    times = []
    failures = 0
    started = time.perf_counter()
    for args in bench_calls(last_up, step, ds_cnt, a.n, a.per_call, a.seed):
        if a.cold:
            tool.drop_from_cache(work)
        t0 = time.perf_counter()
        p = subprocess.run(["rrdtool", "updatev", name] + args, cwd=d,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - t0)
        if p.returncode != 0 or "return_value = 0" not in p.stdout:
            failures += 1
            if failures == 1:
                sys.stderr.write("updatev failed: %s%s\n" % (p.stdout[-300:], p.stderr))
    wall = time.perf_counter() - started

    ordered = sorted(times)
    ms = 1000
    result = {
        "file": os.path.basename(a.rrd),
        "file_size": size,
        "ds_cnt": ds_cnt,
        "rra_cnt": rra_cnt,
        "invocations": a.n,
        "values_per_invocation": a.per_call,
        "cold_cache": bool(a.cold),
        "failures": failures,
        "total_s": round(sum(times), 4),
        "wall_s": round(wall, 4),
        "mean_ms": round(ms * statistics.mean(times), 3),
        "median_ms": round(ms * statistics.median(times), 3),
        "p95_ms": round(ms * nearest_rank(ordered, 0.95), 3),
        "min_ms": round(ms * ordered[0], 3),
        "max_ms": round(ms * ordered[-1], 3),
        "baseline_rrdtool_last_median_ms": round(ms * statistics.median(floor), 3),
        "rrdtool": tool.version_line(),
    }
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        r = result
        print("bench-updatev %s (%d bytes, %d DS, %d RRA): %d invocations x %d values%s"
              % (r["file"], r["file_size"], ds_cnt, rra_cnt, a.n, a.per_call,
                 " (cold cache)" if a.cold else ""))
        print("  total %.3f s (wall %.3f s), mean %.3f ms, median %.3f ms, p95 %.3f ms, "
              "min %.3f ms, max %.3f ms, failures %d"
              % (r["total_s"], r["wall_s"], r["mean_ms"], r["median_ms"], r["p95_ms"],
                 r["min_ms"], r["max_ms"], failures))
        print("  baseline (rrdtool last, same file): median %.3f ms"
              % r["baseline_rrdtool_last_median_ms"])
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failures else 0


def _librrd():
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("rrd") or "librrd.so.8"
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        raise SystemExit("cannot load librrd (%s): %s" % (name, e))
    # int rrd_update_r(const char *filename, const char *template,
    #                  int argc, const char **argv);
    lib.rrd_update_r.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_char_p)]
    lib.rrd_update_r.restype = ctypes.c_int
    lib.rrd_get_error.restype = ctypes.c_char_p
    return lib, ctypes


def inproc(a):
    lib, ctypes = _librrd()
    scratch, work = _scratch_copy(a.rrd)
    size, ds_cnt, _, step, last_up = _facts(work)
    target = work.encode()
    times = []
    failures = 0
    for args in bench_calls(last_up, step, ds_cnt, a.n, a.per_call, a.seed):
        argv = (ctypes.c_char_p * len(args))(*[x.encode() for x in args])
        if a.cold:
            tool.drop_from_cache(work)
        t0 = time.perf_counter()
        rc = lib.rrd_update_r(target, None, len(args), argv)
        times.append(time.perf_counter() - t0)
        if rc != 0:
            failures += 1
            if failures == 1:
                sys.stderr.write("rrd_update_r failed: %s\n" % lib.rrd_get_error())
            lib.rrd_clear_error()
    shutil.rmtree(scratch, ignore_errors=True)

    ordered = sorted(times)
    us = 1e6
    result = {
        "file": os.path.basename(a.rrd),
        "file_size": size,
        "calls": a.n,
        "values_per_call": a.per_call,
        "cold_cache": bool(a.cold),
        "failures": failures,
        "total_s": round(sum(times), 5),
        "mean_us": round(us * statistics.mean(times), 1),
        "median_us": round(us * statistics.median(times), 1),
        "p95_us": round(us * nearest_rank(ordered, 0.95), 1),
        "max_us": round(us * ordered[-1], 1),
    }
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        r = result
        print("bench-inproc %s (%d bytes): %d rrd_update_r calls x %d values%s"
              % (r["file"], r["file_size"], a.n, a.per_call,
                 " (cold cache)" if a.cold else ""))
        print("  total %.4f s, mean %.1f us, median %.1f us, p95 %.1f us, max %.1f us, "
              "failures %d" % (r["total_s"], r["mean_us"], r["median_us"], r["p95_us"],
                               r["max_us"], failures))
    return 1 if failures else 0
