"""Running rrdtool.

rrdtool is always run inside the file's directory and given the bare file
name: `rrdtool create` hashes the name it is given into the Holt-Winters
archives' seasonal_smooth_idx, so `create dir/x.rrd` and `create x.rrd`
make different files. The environment (TZ, locale, no rrdcached) is set
by the `peer` script.
"""

import os
import subprocess
import sys

from shapes import SEED_EXPECTED, SEED_UPDATES


def place(path):
    """(directory, bare name) to run rrdtool with."""
    return os.path.dirname(os.path.abspath(path)), os.path.basename(path)


def run(argv, cwd=None, check=True):
    """Run a command, text output captured; on failure (with `check`) pass
    its stderr on and exit 1."""
    p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit("command failed (%d): %s" % (p.returncode, " ".join(argv)))
    return p


def rrdtool(verb, path, *args, check=True):
    """`rrdtool VERB NAME ARGS…` in the file's directory."""
    d, name = place(path)
    return run(["rrdtool", verb, name] + list(args), cwd=d, check=check)


def version_line():
    return run(["rrdtool", "--version"]).stdout.splitlines()[0].strip()


def create(path, args):
    """A new file from `args` (replacing any file of that name)."""
    d, _ = place(path)
    os.makedirs(d, exist_ok=True)
    if os.path.exists(path):
        os.unlink(path)
    rrdtool("create", path, *args)


def dump(path):
    return rrdtool("dump", path).stdout


def fetch(path, cf, start, end, resolution=None):
    extra = ["-r", str(resolution)] if resolution else []
    return rrdtool("fetch", path, cf, "-s", str(start), "-e", str(end), *extra).stdout


# --- update specs -------------------------------------------------------


def read_spec(path):
    """[(line number, update)] of a spec file; blank and # lines skipped."""
    entries = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if line and not line.startswith("#"):
                entries.append((number, line))
    return entries


def spec_window(updates):
    """Whole seconds of the first and the last update."""
    def seconds(u):
        return int(float(u.split(":", 1)[0]))
    return seconds(updates[0]), seconds(updates[-1])


def _apply_exec(path, entries, keep_going):
    """One `rrdtool update` process per line."""
    done, errors = 0, []
    for number, line in entries:
        p = rrdtool("update", path, line, check=False)
        if p.returncode == 0:
            done += 1
            continue
        errors.append((number, p.stderr.strip()))
        if not keep_going:
            break
    return done, errors


def _apply_batches(path, entries, size, keep_going):
    """`size` lines per `rrdtool update` process. Not the same as one line
    per call for Holt-Winters files: rrdtool runs the seasonal smoother at
    most once per call."""
    done, errors = 0, []
    for at in range(0, len(entries), size):
        batch = entries[at:at + size]
        p = rrdtool("update", path, *[line for _, line in batch], check=False)
        if p.returncode == 0:
            done += len(batch)
            continue
        errors.append((batch[0][0], p.stderr.strip()))
        if not keep_going:
            break
    return done, errors


def _apply_pipe(path, entries, keep_going):
    """All lines through one `rrdtool -` process, one `update` command per
    line: the same rrd_update calls as exec mode without a process each.
    rrdtool answers every command with an `OK …` or `ERROR…` line and goes
    on after an error, so every line is tried even without keep_going."""
    d, name = place(path)
    script = "".join("update %s %s\n" % (name, line) for _, line in entries)
    p = subprocess.run(["rrdtool", "-"], cwd=d, input=script, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    answers = [a for a in p.stdout.splitlines() if a.startswith("OK ") or a.startswith("ERROR")]
    done, errors = 0, []
    for (number, _), answer in zip(entries, answers):
        if answer.startswith("OK "):
            done += 1
        else:
            errors.append((number, answer))
    if len(answers) != len(entries):
        errors.append((0, "pipe mode: %d commands, %d status lines" % (len(entries), len(answers))))
    if errors and not keep_going:
        errors = errors[:1]
    return done, errors


def apply_spec(path, entries, mode="pipe", keep_going=False):
    """Apply spec `entries` ([(line number, update)]) to `path`; returns
    (updates applied, [(line number, error)])."""
    if mode == "pipe":
        if any(ch.isspace() for ch in os.path.basename(path)):
            # `rrdtool -` splits its commands at whitespace.
            return _apply_exec(path, entries, keep_going)
        return _apply_pipe(path, entries, keep_going)
    if mode == "exec":
        return _apply_exec(path, entries, keep_going)
    if mode.startswith("batch:"):
        return _apply_batches(path, entries, int(mode.split(":", 1)[1]), keep_going)
    raise SystemExit("unknown --mode %r" % mode)


def report_errors(errors):
    """Each error on stderr; the exit status they give."""
    for number, message in errors:
        sys.stderr.write("line %d: %s\n" % (number, message))
    return 1 if errors else 0


# --- the seed -----------------------------------------------------------


def seed_updatev(path):
    """The seed's nine updates as ONE `rrdtool updatev` call: its stdout."""
    return rrdtool("updatev", path, *SEED_UPDATES).stdout


def seed_values(updatev_output):
    """(whether the HWPREDICT and SEASONAL values are the expected ones,
    the values found)."""
    found = {cf: [] for cf in SEED_EXPECTED}
    for line in updatev_output.splitlines():
        for cf, values in found.items():
            if "]RRA[%s][1]DS[ds0] = " % cf in line:
                values.append(line.rsplit("= ", 1)[1].strip())
    return found == SEED_EXPECTED, found


# --- the page cache -----------------------------------------------------


def drop_from_cache(path):
    """Write the file back and ask the kernel to forget its pages (dirty
    pages cannot be dropped)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
