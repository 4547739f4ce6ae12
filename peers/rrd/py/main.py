"""The RRD peer's commands (run through ../peer, which sets TZ, the locale
and installs rrdtool). One function per command; the work is in the
modules beside this one:

    shapes.py    the seed, the shapes and the update generators
    tool.py      running rrdtool in the file's directory; applying specs
    header.py    an independent decoder of the binary header
    bench.py     bench-updatev and bench-inproc
    corpus.py    corpus and verify-corpus
    selftest.py  selftest
"""

import argparse
import json
import sys

sys.dont_write_bytecode = True  # the peer lives in the repository

import bench  # noqa: E402
import corpus  # noqa: E402
import header  # noqa: E402
import selftest  # noqa: E402
import tool  # noqa: E402
from shapes import SEED_CREATE, SHAPES, SHAPE_NAMES, create_args, spec_lines, spec_text  # noqa: E402


def cmd_shapes(a):
    for name, args, what in SHAPES:
        print("%-8s %s" % (name, what))
        print("         rrdtool create NAME.rrd %s" % " ".join(args))


def cmd_seed_create(a):
    tool.create(a.out, SEED_CREATE)
    print(a.out)


def cmd_seed_updatev(a):
    said = tool.seed_updatev(a.rrd)
    sys.stdout.write(said)
    sys.stdout.flush()
    good, _ = tool.seed_values(said)
    sys.stderr.write("\nseed-updatev: HWPREDICT/SEASONAL %s the bug report's reference values\n"
                     % ("match" if good else "DO NOT match"))
    return 0 if good else 1


def cmd_create(a):
    tool.create(a.out, create_args(a.shape))
    print(a.out)


def _write_spec(path, lines):
    with open(path, "w") as f:
        f.write(spec_text(lines))


def cmd_updates(a):
    lines = spec_lines(a.shape, a.seed, a.count)
    _write_spec(a.spec, lines)
    print("%s: %d lines" % (a.spec, len(lines)))


def cmd_gen(a):
    tool.create(a.out, create_args(a.shape))
    lines = spec_lines(a.shape, a.seed, a.count)
    if a.spec_out:
        _write_spec(a.spec_out, lines)
    done, errors = tool.apply_spec(a.out, list(enumerate(lines, 1)), a.mode)
    print("%s: shape=%s seed=%d updates=%d/%d" % (a.out, a.shape, a.seed, done, len(lines)))
    return tool.report_errors(errors)


def cmd_apply(a):
    entries = tool.read_spec(a.spec)
    done, errors = tool.apply_spec(a.rrd, entries, a.mode, a.keep_going)
    print("applied %d/%d updates (%s)" % (done, len(entries), a.mode))
    return tool.report_errors(errors)


def cmd_dump(a):
    sys.stdout.write(tool.dump(a.rrd))


def cmd_fetch(a):
    sys.stdout.write(tool.fetch(a.rrd, a.cf, a.start, a.end, a.resolution))


def cmd_header(a):
    print(json.dumps(header.for_json(header.decode_file(a.rrd)), indent=1))


def cmd_bench_updatev(a):
    return bench.updatev(a)


def cmd_bench_inproc(a):
    return bench.inproc(a)


def cmd_corpus(a):
    corpus.write_corpus(a.outdir)


def cmd_verify_corpus(a):
    return 1 if corpus.verify(a.dir).failed else 0


def cmd_selftest(a):
    return selftest.main(a.corpus)


def _positive(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def parser():
    p = argparse.ArgumentParser(prog="peer", description="The RRD peer (see README.md).")
    sub = p.add_subparsers(dest="cmd", required=True)

    def command(name, fn, *positionals):
        s = sub.add_parser(name)
        for arg in positionals:
            s.add_argument(arg)
        s.set_defaults(fn=fn)
        return s

    def shaped(s, seeded):
        s.add_argument("--shape", required=True, choices=SHAPE_NAMES)
        if seeded:
            s.add_argument("--seed", type=int, required=True)
            s.add_argument("--count", type=int, default=500)

    command("shapes", cmd_shapes)
    command("seed-create", cmd_seed_create, "out")
    command("seed-updatev", cmd_seed_updatev, "rrd")
    shaped(command("create", cmd_create, "out"), False)
    s = command("gen", cmd_gen, "out")
    shaped(s, True)
    s.add_argument("--spec-out")
    s.add_argument("--mode", default="pipe")
    shaped(command("updates", cmd_updates, "spec"), True)
    s = command("apply", cmd_apply, "rrd", "spec")
    s.add_argument("--mode", default="pipe")
    s.add_argument("--keep-going", action="store_true")
    command("dump", cmd_dump, "rrd")
    s = command("fetch", cmd_fetch, "rrd", "cf", "start", "end")
    s.add_argument("--resolution", "-r")
    command("header", cmd_header, "rrd")
    for name, fn in (("bench-updatev", cmd_bench_updatev), ("bench-inproc", cmd_bench_inproc)):
        s = command(name, fn, "rrd")
        s.add_argument("n", type=_positive)
        s.add_argument("--per-call", type=_positive, default=3)
        if name == "bench-updatev":
            s.add_argument("--in-place", action="store_true")
        s.add_argument("--cold", action="store_true")
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--json", action="store_true")
    command("corpus", cmd_corpus, "outdir")
    command("verify-corpus", cmd_verify_corpus, "dir")
    s = command("selftest", cmd_selftest)
    s.add_argument("--corpus", help="corpus to check against (default: the repository's "
                   "testdata/rrd)")
    return p


def main(argv):
    a = parser().parse_args(argv)
    return a.fn(a) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
