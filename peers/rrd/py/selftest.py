"""`peer selftest`: what the peer can prove about itself.

* the spec generator writes exactly the specs of the repository's corpus
  (testdata/rrd/NAME.updates.txt: seed 1, 500 lines);
* `verify-corpus` of that corpus passes: rrdtool makes the stored dumps,
  fetches and bytes from the stored empty files;
* the seed's updatev prints the bug report's HWPREDICT/SEASONAL values;
* the header decoder agrees with `rrdtool info` (header_size, cur_row) and
  with the file size on every corpus file and every fresh shape;
* pipe, exec and (for files without Holt-Winters) batch updates give the
  same file; non-HW dumps do not depend on the random initial cur_row;
* both benchmarks run, and `bench-updatev --in-place` leaves the file as
  the documented sample stream applied by hand does.
"""

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

import corpus
import header
import tool
from shapes import SEED_CREATE, SHAPES, bench_calls, spec_lines, spec_text

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(os.path.dirname(HERE), "peer")
REPO_CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "testdata", "rrd"))


class _Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, good, detail=""):
        print("%s %s%s" % ("ok  " if good else "FAIL", name,
                           (": " + detail) if detail and not good else ""))
        if good:
            self.passed += 1
        else:
            self.failed += 1
        sys.stdout.flush()


def _info(path):
    """(header_size, [cur_row per RRA]) as `rrdtool info` prints them."""
    text = tool.rrdtool("info", path).stdout
    size = re.search(r"^header_size = (\d+)$", text, re.M)
    rows = re.findall(r"^rra\[(\d+)\]\.cur_row = (\d+)$", text, re.M)
    return (int(size.group(1)) if size else None,
            [int(row) for _, row in sorted(rows, key=lambda x: int(x[0]))])


def _header_agrees(check, label, path):
    h = header.decode_file(path)
    check("%s: header size = file size" % label, h.get("expected_size") == h["file_size"],
          "%s vs %d" % (h.get("expected_size"), h["file_size"]))
    size, cur_rows = _info(path)
    check("%s: header_len = rrdtool info header_size" % label, h.get("header_len") == size,
          "%s vs %s" % (h.get("header_len"), size))
    check("%s: cur_row = rrdtool info cur_row" % label,
          [r["cur_row"] for r in h.get("rra", [])] == cur_rows)
    return h


def _peer(*args):
    return subprocess.run([PEER] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def _corpus_checks(check, where, scratch):
    for name, _, _ in SHAPES:
        stored = os.path.join(where, name + ".updates.txt")
        if not os.path.exists(stored):
            check("%s.updates.txt in %s" % (name, where), False, "missing")
            continue
        with open(stored) as f:
            want = f.read()
        check("%s spec = %s.updates.txt" % (name, name),
              spec_text(spec_lines(name, 1, 500)) == want)

    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        tally = corpus.verify(where)
    for line in said.getvalue().splitlines()[:-1]:
        print("     verify-corpus: " + line)
    check("verify-corpus %s" % where, tally.failed == 0 and tally.passed >= 30,
          "%d passed, %d failed" % (tally.passed, tally.failed))

    for f in sorted(os.listdir(where)):
        if f.endswith(".rrd") or f.endswith(".rrd.gz"):
            plain = f[:-3] if f.endswith(".gz") else f
            copy = os.path.join(scratch, "corpus-" + plain)
            with open(copy, "wb") as out:
                out.write(corpus.read_stored(os.path.join(where, plain)))
            _header_agrees(check, plain, copy)


def _seed_checks(check, scratch):
    seed = os.path.join(scratch, "in.rrd")
    tool.create(seed, SEED_CREATE)
    h = _header_agrees(check, "seed", seed)
    check("seed file is 1912 bytes", h["file_size"] == 1912, str(h["file_size"]))
    check("seed has HWPREDICT and its 4 implicit archives",
          [r["cf"] for r in h["rra"]]
          == ["AVERAGE", "HWPREDICT", "SEASONAL", "DEVSEASONAL", "DEVPREDICT", "FAILURES"])
    good, found = tool.seed_values(tool.seed_updatev(seed))
    check("seed updatev prints the reference HWPREDICT/SEASONAL values", good, str(found))


def _shape_checks(check, scratch):
    for name, args, _ in SHAPES:
        spec = spec_lines(name, 7, 60)
        check("%s spec is deterministic" % name, spec == spec_lines(name, 7, 60))
        entries = list(enumerate(spec, 1))
        piped = os.path.join(scratch, "pipe", name + ".rrd")
        tool.create(piped, args)
        _header_agrees(check, name, piped)
        # The same start file, updated one line per call in two ways.
        execed = os.path.join(scratch, "exec", name + ".rrd")
        os.makedirs(os.path.dirname(execed), exist_ok=True)
        shutil.copyfile(piped, execed)
        done, errors = tool.apply_spec(piped, entries, "pipe")
        check("%s pipe applies all 60" % name, done == 60 and not errors, str(errors[:1]))
        done, errors = tool.apply_spec(execed, entries, "exec")
        check("%s exec applies all 60" % name, done == 60 and not errors, str(errors[:1]))
        with open(piped, "rb") as a, open(execed, "rb") as b:
            check("%s pipe = exec (bytes)" % name, a.read() == b.read())
        piped_dump = tool.dump(piped)
        h = header.decode_file(piped)
        check("%s last_up = the spec's last time" % name,
              h["live_head"]["last_up"] == tool.spec_window(spec)[1])
        if name in ("hw", "mhw"):
            continue
        # Without Holt-Winters neither the initial cur_row nor the number
        # of lines per call shows in the dump.
        fresh = os.path.join(scratch, "fresh", name + ".rrd")
        tool.create(fresh, args)
        tool.apply_spec(fresh, entries, "batch:7")
        check("%s dump independent of cur_row and batching" % name,
              tool.dump(fresh) == piped_dump)


def _bench_checks(check, scratch):
    gauge = os.path.join(scratch, "pipe", "gauge.rrd")
    p = _peer("bench-updatev", gauge, "5", "--json")
    check("bench-updatev runs", p.returncode == 0 and '"failures": 0' in p.stdout,
          p.stderr[-300:])
    p = _peer("bench-inproc", gauge, "5", "--json")
    check("bench-inproc runs", p.returncode == 0 and '"failures": 0' in p.stdout,
          p.stderr[-300:])
    # The stream: bench-updatev --in-place against the same calls by hand.
    by_bench = os.path.join(scratch, "stream", "bench.rrd")
    by_hand = os.path.join(scratch, "stream", "hand.rrd")
    os.makedirs(os.path.dirname(by_bench), exist_ok=True)
    shutil.copyfile(gauge, by_bench)
    shutil.copyfile(gauge, by_hand)
    p = _peer("bench-updatev", by_bench, "4", "--in-place", "--per-call", "2", "--seed", "3")
    h = header.decode_file(by_hand)
    sh = h["stat_head"]
    for args in bench_calls(h["live_head"]["last_up"], sh["pdp_step"], sh["ds_cnt"], 4, 2, 3):
        tool.rrdtool("updatev", by_hand, *args)
    with open(by_bench, "rb") as a, open(by_hand, "rb") as b:
        check("bench-updatev --in-place writes the documented stream",
              p.returncode == 0 and a.read() == b.read(), p.stderr[-300:])


def main(corpus_dir=None):
    where = corpus_dir or REPO_CORPUS
    check = _Checks()
    scratch = tempfile.mkdtemp(prefix="rrd-peer-selftest-")
    try:
        _corpus_checks(check, where, scratch)
        _seed_checks(check, scratch)
        _shape_checks(check, scratch)
        _bench_checks(check, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("%d passed, %d failed" % (check.passed, check.failed))
    return 1 if check.failed else 0
