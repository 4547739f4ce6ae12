"""The files the peer makes and the updates it feeds them.

Two families:

* the seed: the create command of the benchmark this project reproduces,
  and the nine updates of an upstream rrdtool-1.x bug report on HWPREDICT
  that used exactly that command, with the HWPREDICT and SEASONAL values
  the report gives as correct (rrdtool 1.7.2 prints them);
* shapes: named create commands, each exercising one part of the format,
  fed by a deterministic update generator.

The generator must give the same text for the same (shape, seed, count) on
every machine and for every future edit of this file: the corpus in
testdata/rrd was written by it. It therefore uses nothing but its own
splitmix64 stream and Python's correctly rounded float arithmetic, and
every expression below is evaluated in a fixed order. Do not "simplify"
an expression (`a - b - c` is not `a - (b + c)` in floating point) or
reorder the draws from the stream: either changes the specs.
"""

import hashlib
import math

# --- the seed -----------------------------------------------------------

SEED_CREATE = [
    "-s", "86400", "-b", "962496000",
    "DS:ds0:GAUGE:86400:U:U",
    "RRA:AVERAGE:.5:1:10",
    "RRA:HWPREDICT:10:.5:.1:2",
]

# One update a day for nine days after the start, value = day number.
SEED_UPDATES = ["%d:%d" % (962496000 + 86400 * day, day) for day in range(1, 10)]

# What `rrdtool updatev` must print for the seed's HWPREDICT and SEASONAL
# archives, update by update (the values of the bug report).
SEED_EXPECTED = {
    "HWPREDICT": [
        "NaN", "NaN", "1.0000000000e+00", "3.1000000000e+00",
        "3.1950000000e+00", "5.0577500000e+00", "5.5374875000e+00",
        "7.1335443750e+00", "7.8218987187e+00",
    ],
    "SEASONAL": [
        "0.0000000000e+00", "1.0000000000e+00", "5.0000000000e-01",
        "1.2250000000e+00", "9.5125000000e-01", "1.4605625000e+00",
        "1.3168781250e+00", "1.6771764063e+00", "1.6114034453e+00",
    ],
}

# --- shapes -------------------------------------------------------------

# 2020-09-13 12:26:40 UTC: on purpose not a multiple of the step.
START = 1600000000
STEP = 300


def _with_start(*defs):
    return ["-s", str(STEP), "-b", str(START)] + list(defs)


# (name, create arguments after the file name, what it exercises), in the
# order every listing and the corpus use.
SHAPES = [
    ("gauge", _with_start(
        "DS:temp:GAUGE:600:-50:150", "DS:load:GAUGE:600:0:U",
        "RRA:AVERAGE:0.5:1:288", "RRA:MIN:0.5:12:96", "RRA:MAX:0.5:12:96"),
     "2 GAUGE DS (one with min/max), AVERAGE/MIN/MAX RRAs"),
    ("counter", _with_start(
        "DS:octets:COUNTER:600:0:1000000", "DS:delta:DERIVE:600:U:U",
        "RRA:AVERAGE:0.5:1:288", "RRA:AVERAGE:0.5:12:96", "RRA:MAX:0.5:12:96"),
     "COUNTER (32-bit wraps, one 64-bit wrap, resets above max) and signed DERIVE"),
    ("mixed", _with_start(
        "DS:g:GAUGE:600:U:U", "DS:a:ABSOLUTE:600:0:U",
        "RRA:AVERAGE:0.5:1:300", "RRA:AVERAGE:0.25:6:100", "RRA:MIN:0.5:6:100",
        "RRA:MAX:0.75:6:100", "RRA:LAST:0.9:6:100", "RRA:LAST:0:1:50",
        "RRA:AVERAGE:0:24:30"),
     "GAUGE+ABSOLUTE, every basic CF incl. LAST, several xff values, "
     "sub-second timestamps"),
    ("hw", _with_start(
        "DS:a:GAUGE:600:U:U", "DS:b:GAUGE:600:U:U",
        "RRA:AVERAGE:0.5:1:600", "RRA:HWPREDICT:600:0.1:0.0035:48"),
     "HWPREDICT with its 4 implicit RRAs (SEASONAL, DEVSEASONAL, DEVPREDICT, "
     "FAILURES), period 48 so the smoother runs"),
    ("big", _with_start(
        "DS:in:GAUGE:600:U:U", "DS:out:GAUGE:600:U:U",
        "RRA:AVERAGE:0.5:1:100000", "RRA:AVERAGE:0.5:6:5000", "RRA:MAX:0.5:6:5000",
        "RRA:AVERAGE:0.5:288:1000", "RRA:MAX:0.5:288:1000"),
     "~1.7 MiB, 2 GAUGE DS (like the seed's updatev database)"),
    ("compute", _with_start(
        "DS:a:GAUGE:600:U:U", "DS:b:GAUGE:600:U:U", "DS:mean:COMPUTE:a,b,+,2,/",
        "RRA:AVERAGE:0.5:1:288", "RRA:MAX:0.5:12:48"),
     "2 GAUGE inputs + 1 COMPUTE DS (rpn stored in ds_def.par)"),
    ("dtypes", _with_start(
        "DS:dc:DCOUNTER:600:U:U", "DS:dd:DDERIVE:600:U:U",
        "RRA:AVERAGE:0.5:1:288", "RRA:LAST:0.5:12:48"),
     "DCOUNTER+DDERIVE (forces file version 0005)"),
    ("mhw", _with_start(
        "DS:a:GAUGE:600:0:U", "DS:b:GAUGE:600:0:U",
        "RRA:AVERAGE:0.5:1:600", "RRA:MHWPREDICT:600:0.1:0.0035:48"),
     "MHWPREDICT (multiplicative HW, forces file version 0004)"),
]

SHAPE_NAMES = [name for name, _, _ in SHAPES]


def create_args(shape):
    for name, args, _ in SHAPES:
        if name == shape:
            return list(args)
    raise SystemExit("unknown shape %r (have: %s)" % (shape, ", ".join(SHAPE_NAMES)))


# --- the random stream --------------------------------------------------

_MASK = (1 << 64) - 1


class SplitMix64:
    """Steele, Lea and Flood's splitmix64: tiny, and the same everywhere."""

    def __init__(self, seed):
        self.state = seed & _MASK

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def u(self):
        """A double in [0, 1): the top 53 bits."""
        return (self.next_u64() >> 11) / float(1 << 53)

    def normal(self):
        """A standard normal deviate (Box-Muller, two draws)."""
        u1 = max(self.u(), 1e-300)
        u2 = self.u()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2 * math.pi * u2)


def fixed(value, decimals=4):
    return "%.*f" % (decimals, value)


def _shape_salt(shape):
    """Different shapes get different streams for the same seed."""
    return int.from_bytes(hashlib.sha256(shape.encode()).digest()[:8], "little")


# --- values, one function per shape --------------------------------------
#
# Each takes (stream, state, line index, seconds since the previous line,
# phase) and returns the two value fields before the U substitution.


class _Running:
    """What some shapes carry from line to line."""

    def __init__(self, count):
        self.count = count
        self.c32 = 4294967295 - 2_000_000  # a 32-bit counter that wraps soon
        self.deriv = 0
        self.dc = 1000.0
        self.dd = 0.0


def _gauge(r, run, i, dt, phase):
    v1 = 20 + 10 * math.sin(phase / 86400.0) + 2 * r.normal()
    if r.u() < 0.02:
        v1 = 160 + r.u() * 10  # above the DS maximum: stored as unknown
    v2 = max(0.0, 1.5 + 0.8 * r.normal())
    return fixed(v1), fixed(v2)


def _big(r, run, i, dt, phase):
    v1 = r.u() * 1000
    v2 = r.u() * 1000
    return fixed(v1), fixed(v2)


def _counter(r, run, i, dt, phase):
    rate = 1000 + r.u() * 4000
    if r.u() < 0.01:
        run.c32 = int(r.u() * 1000)  # a reset: the rate exceeds the max, unknown
    else:
        run.c32 = (run.c32 + int(rate * dt)) % (1 << 32)
    third = run.count // 3
    if i == third:
        octets = "18446744073709550000"  # just below 2^64 ...
    elif i == third + 1:
        octets = "1200"  # ... and wrapped past it
    else:
        octets = "%d" % run.c32
    run.deriv += int((r.u() - 0.45) * 20000)
    return octets, "%d" % run.deriv


def _mixed(r, run, i, dt, phase):
    g = fixed(50 * math.sin(phase / 20000.0) + 5 * r.normal(), 3)
    a = "%d" % int(r.u() * 5000)
    return g, a


def _holt_winters(multiplicative):
    season = 48 * STEP

    def values(r, run, i, dt, phase):
        v1 = 100 + 50 * math.sin(phase / season) + 3 * r.normal()
        v2 = 1000 + 300 * math.cos(phase / season) + 20 * r.normal()
        if r.u() < 0.02:
            v1 *= 3  # a spike, for the FAILURES archive
        if multiplicative:
            v1, v2 = abs(v1) + 1, abs(v2) + 1
        return fixed(v1), fixed(v2)

    return values


def _compute(r, run, i, dt, phase):
    a = fixed(10 + 5 * r.normal())
    b = fixed(30 + 5 * r.normal())
    return a, b


def _dtypes(r, run, i, dt, phase):
    if r.u() < 0.02:
        run.dc = run.dc - 100 - r.u() * 50  # goes down: DCOUNTER says unknown
    else:
        run.dc += r.u() * 500 * (dt / 300.0)
    run.dd += (r.u() - 0.5) * 300
    return fixed(run.dc, 3), fixed(run.dd, 3)


_VALUES = {
    "gauge": _gauge,
    "big": _big,
    "counter": _counter,
    "mixed": _mixed,
    "hw": _holt_winters(False),
    "mhw": _holt_winters(True),
    "compute": _compute,
    "dtypes": _dtypes,
}


def _seconds_to_next(r, i, count):
    if i == count // 2:
        return 7200 + int(r.u() * 600)  # the one long gap: unknown PDPs
    if r.u() < 0.02:
        return 601 + int(r.u() * 1400)  # a missed heartbeat
    return 60 + int(r.u() * 480)


def spec_lines(shape, seed, count, start=START):
    """The update spec of `shape`: `count` lines `TIME:V1:V2`, strictly
    increasing in time, one long gap in the middle, ~2% missed heartbeats,
    ~3% of each value `U`."""
    if shape not in _VALUES:
        raise SystemExit("unknown shape %r (have: %s)" % (shape, ", ".join(SHAPE_NAMES)))
    values = _VALUES[shape]
    r = SplitMix64(seed ^ _shape_salt(shape))
    run = _Running(count)
    t = float(start)
    lines = []
    for i in range(count):
        dt = _seconds_to_next(r, i, count)
        # Only `mixed` draws here: 30% of its lines get a fraction.
        if shape == "mixed" and r.u() < 0.3:
            t = t + dt + round(r.u(), 3)
            stamp = "%.3f" % t
        else:
            t = math.floor(t) + dt
            stamp = "%d" % t
        phase = 2 * math.pi * (t - start)
        unknown = (r.u() < 0.03, r.u() < 0.03)
        fields = values(r, run, i, dt, phase)
        fields = ["U" if u else f for u, f in zip(unknown, fields)]
        lines.append("%s:%s:%s" % (stamp, fields[0], fields[1]))
    return lines


def spec_text(lines):
    return "\n".join(lines) + "\n"


def bench_calls(last_up, step, ds_cnt, calls, per_call, seed):
    """The benchmark's update calls: `calls` lists of `per_call` arguments
    `TIME:V…`, one step apart from the file's last update on, each value
    `%.3f` of u*1000 from splitmix64(seed)."""
    r = SplitMix64(seed)
    t = last_up
    for _ in range(calls):
        args = []
        for _ in range(per_call):
            t += step
            args.append("%d:%s" % (t, ":".join(fixed(r.u() * 1000, 3) for _ in range(ds_cnt))))
        yield args
