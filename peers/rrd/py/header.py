"""An independent reader of an RRD file's header.

Written from rrd_format.h of rrdtool 1.7 for the native x86_64 layout
(LP64, little endian, 8-byte alignment), and nothing else: it is what a
reimplementation's header parser is checked against, so it must not share
its code or its mistakes. The result is a plain dict (JSON for `header`),
every section's offset included.

The sections, in file order:

    stat_head   128 B   cookie "RRD", version "000N", float cookie,
                        ds_cnt, rra_cnt, pdp_step, 10 unused params
    ds_def      120 B   per DS: name[20], type[20], 10 params
    rra_def     120 B   per RRA: cf[20], (pad), row_cnt, pdp_cnt, 10 params
    live_head    16 B   last_up, last_up_usec (8 B, no usec, before 0003)
    pdp_prep    112 B   per DS: last_ds[30], (pad), 10 params
    cdp_prep     80 B   per RRA and DS: 10 params
    rra_ptr       8 B   per RRA: cur_row
    values              rows x ds_cnt doubles, RRA after RRA
"""

import struct

FLOAT_COOKIE = 8.642135e130
OP_END = 32  # the last node of a COMPUTE data source's stored RPN

STAT_HEAD_LEN = 128
DS_DEF_LEN = 120
RRA_DEF_LEN = 120
PDP_PREP_LEN = 112
CDP_PREP_LEN = 80
RRA_PTR_LEN = 8


def _text(raw):
    """A NUL-terminated C string field."""
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


class _Cursor:
    """Little-endian fields read from `data`, section after section."""

    def __init__(self, data):
        self.data = data
        self.at = 0

    def peek(self, fmt, rel=0):
        return struct.unpack_from("<" + fmt, self.data, self.at + rel)

    def skip(self, n):
        self.at += n


def _data_source(c):
    name, kind = c.peek("20s20s")
    ds = {"name": _text(name), "type": _text(kind)}
    if ds["type"] == "COMPUTE":
        # The parameters hold the RPN: 20 nodes of {char op; short val}.
        nodes = []
        for k in range(20):
            op, val = c.peek("bxh", 40 + 4 * k)
            nodes.append([op, val])
            if op == OP_END:
                break
        ds["rpn_nodes"] = nodes
    else:
        heartbeat, = c.peek("Q", 40)
        low, high = c.peek("dd", 48)
        ds.update({"heartbeat": heartbeat, "min": low, "max": high})
    c.skip(DS_DEF_LEN)
    return ds


def _archive(c):
    cf, rows, pdp_cnt = c.peek("20s4xQQ")
    rra = {
        "cf": _text(cf),
        "row_cnt": rows,
        "pdp_cnt": pdp_cnt,
        # The parameters are a union: show both readings.
        "par_as_double": c.peek("10d", 40),
        "par_as_u64": c.peek("10Q", 40),
    }
    c.skip(RRA_DEF_LEN)
    return rra


def decode(data):
    c = _Cursor(data)
    cookie, version, float_cookie, ds_cnt, rra_cnt, pdp_step = c.peek("4s5s7xdQQQ")
    c.skip(STAT_HEAD_LEN)
    offsets = {"stat_head": 0}
    head = {
        "file_size": len(data),
        "stat_head": {
            "cookie": _text(cookie),
            "version": _text(version),
            "float_cookie": float_cookie,
            "float_cookie_ok": float_cookie == FLOAT_COOKIE,
            "ds_cnt": ds_cnt,
            "rra_cnt": rra_cnt,
            "pdp_step": pdp_step,
        },
        "offsets": offsets,
    }
    if _text(cookie) != "RRD" or float_cookie != FLOAT_COOKIE:
        head["error"] = "not a native x86_64 RRD (cookie/float cookie mismatch)"
        return head
    file_version = int(_text(version) or "0")

    offsets["ds_def"] = c.at
    dss = [_data_source(c) for _ in range(ds_cnt)]
    offsets["rra_def"] = c.at
    rras = [_archive(c) for _ in range(rra_cnt)]

    offsets["live_head"] = c.at
    if file_version >= 3:
        last_up, usec = c.peek("qq")
        c.skip(16)
    else:
        last_up, = c.peek("q")
        usec = 0
        c.skip(8)
    head["live_head"] = {"last_up": last_up, "last_up_usec": usec}

    offsets["pdp_prep"] = c.at
    for ds in dss:
        last_ds, = c.peek("30s")
        unknown_sec, = c.peek("Q", 32)
        value, = c.peek("d", 40)
        ds["pdp_prep"] = {"last_ds": _text(last_ds), "unknown_sec": unknown_sec, "value": value}
        c.skip(PDP_PREP_LEN)

    offsets["cdp_prep"] = c.at
    for rra in rras:
        rra["cdp_prep"] = []
        for _ in range(ds_cnt):
            rra["cdp_prep"].append({"as_double": c.peek("10d"), "as_u64": c.peek("10Q")})
            c.skip(CDP_PREP_LEN)

    offsets["rra_ptr"] = c.at
    for rra in rras:
        rra["cur_row"], = c.peek("Q")
        c.skip(RRA_PTR_LEN)

    offsets["values"] = c.at
    head["header_len"] = c.at
    head["expected_size"] = c.at + 8 * ds_cnt * sum(r["row_cnt"] for r in rras)
    head["ds"] = dss
    head["rra"] = rras
    return head


def decode_file(path):
    with open(path, "rb") as f:
        return decode(f.read())


def for_json(x):
    """JSON has no NaN or infinity: spell them as strings."""
    if isinstance(x, float):
        if x != x:
            return "NaN"
        if x in (float("inf"), float("-inf")):
            return "Inf" if x > 0 else "-Inf"
        return x
    if isinstance(x, dict):
        return {k: for_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [for_json(v) for v in x]
    return x
