"""`peer selftest`: the revlog peer checked against the repository's
corpus (testdata/revlog, made by hg 6.3.2) and against hg itself.

    selftest.py PEER [CORPUS]

* the corpus store, put back into a fresh `hg init`: every `debugindex`
  form and `log` (read and mapped) print the stored texts;
* `debugindex` of the corpus directory itself (not a repository) and of a
  raw path: the stored `debugrevlogindex -v` columns, less offset/length;
* `gen-repo --revs 2000` rebuilds synthetic-2000 to the byte, with the
  stored `debugindex` and `log` texts, and reports the sizes it made;
* `check-mmap`: hg maps the changelog exactly from the threshold
  00changelog.i's size on;
* `gen-repo` of the other modes, its refusals, `evict`/`resident`, and a
  one-run `time-log`.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "testdata", "revlog"))
HG = os.environ.get("HG", "hg")


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, good, detail=""):
        print("%s %s%s" % ("ok  " if good else "FAIL", name,
                           (": " + detail) if detail and not good else ""))
        sys.stdout.flush()
        if good:
            self.passed += 1
        else:
            self.failed += 1


def run(argv, cwd=None):
    return subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def first_difference(got, want):
    for n, (g, w) in enumerate(zip(got.splitlines(), want.splitlines()), 1):
        if g != w:
            return "line %d: %r, want %r" % (n, g[:120], w[:120])
    return "%d lines, want %d" % (len(got.splitlines()), len(want.splitlines()))


class Suite:
    def __init__(self, peer, corpus, scratch):
        self.peer, self.corpus, self.scratch = peer, corpus, scratch
        self.check = Checks()

    def peer_out(self, *args):
        p = run([self.peer] + list(args))
        if p.returncode != 0:
            return None, p.stderr.decode(errors="replace")[-300:]
        return p.stdout, ""

    def same_as(self, label, args, stored):
        got, err = self.peer_out(*args)
        want = read(stored)
        self.check(label, got == want, err or (first_difference(got, want) if got else ""))

    def columns_as(self, label, args, stored_verbose):
        """Non-verbose debugrevlogindex = the -v text less offset/length."""
        got, err = self.peer_out(*args)
        want = [line.split() for line in read(stored_verbose).splitlines()]
        want = [fields[:1] + fields[3:] for fields in want]
        self.check(label, got is not None and [l.split() for l in got.splitlines()] == want,
                   err)

    # --- the 200-commit corpus --------------------------------------------

    def rebuilt_corpus(self):
        """A repository whose store is the corpus's files."""
        repo = os.path.join(self.scratch, "corpus-repo")
        run([HG, "init", repo])
        store = os.path.join(repo, ".hg", "store")
        self.check("a fresh store has the corpus's requirements",
                   read(os.path.join(store, "requires")) == read(os.path.join(self.corpus,
                                                                              "requires")))
        for top, dirs, files in os.walk(self.corpus):
            dirs[:] = [d for d in dirs if d != "synthetic-2000"]
            for name in files:
                if name.endswith(".txt") or name in ("requires", "repo-requires"):
                    continue
                rel = os.path.relpath(os.path.join(top, name), self.corpus)
                os.makedirs(os.path.dirname(os.path.join(store, rel)), exist_ok=True)
                shutil.copyfile(os.path.join(top, name), os.path.join(store, rel))
        return repo

    def corpus_checks(self):
        c = self.corpus
        repo = self.rebuilt_corpus()
        for form in ("-c", "00changelog.i", "changelog"):
            self.same_as("debugindex %s" % form, ["debugindex", repo, form],
                         os.path.join(c, "00changelog.i.debugindex.txt"))
        self.same_as("debugindex -c --full", ["debugindex", repo, "-c", "--full"],
                     os.path.join(c, "00changelog.i.debugindex-full.txt"))
        for form in ("-m", "00manifest.i", "manifest"):
            self.same_as("debugindex %s" % form, ["debugindex", repo, form],
                         os.path.join(c, "00manifest.i.debugindex.txt"))
        filelogs = sorted(os.path.relpath(os.path.join(top, f), c)
                          for top, _, files in os.walk(os.path.join(c, "data"))
                          for f in files if f.endswith(".i"))
        for log in filelogs:
            self.same_as("debugindex %s" % log, ["debugindex", repo, log],
                         os.path.join(c, log + ".debugindex.txt"))
        for threshold in (None, "4k", "none"):
            extra = ["--threshold", threshold] if threshold else []
            self.same_as("log 5 %s" % " ".join(extra), ["log", repo, "5"] + extra,
                         os.path.join(c, "log-l5.txt"))
        p = run([HG, "-R", repo, "log", "-T", "{rev}:{node}\n"])
        self.check("hg log of the rebuilt store = log-all-nodes.txt",
                   p.stdout == read(os.path.join(c, "log-all-nodes.txt")))
        # DIR is the corpus itself: read by path.
        for log in ["00changelog.i", "00manifest.i"] + filelogs:
            self.columns_as("debugindex CORPUS %s" % log, ["debugindex", c, log],
                            os.path.join(c, log + ".debugrevlogindex.txt"))
        raw = os.path.join(repo, ".hg", "store", "00manifest.i")
        self.columns_as("debugindex of a raw path", ["debugindex", repo, raw],
                        os.path.join(c, "00manifest.i.debugrevlogindex.txt"))

    # --- gen-repo ---------------------------------------------------------

    def synthetic_checks(self):
        want = os.path.join(self.corpus, "synthetic-2000")
        repo = os.path.join(self.scratch, "synthetic")
        said, err = self.peer_out("gen-repo", repo, "--revs", "2000")
        self.check("gen-repo --revs 2000 runs", said is not None, err)
        if said is None:
            return None
        lines = said.decode().splitlines()
        self.check("gen-repo's first line",
                   re.fullmatch(r"gen-repo: 2000 revisions in %s, mode=file, [0-9]+\.[0-9] s"
                                % re.escape(repo), lines[0]) is not None, lines[0])
        store = os.path.join(repo, ".hg", "store")
        sizes = ["  %s %d bytes" % (f, os.path.getsize(os.path.join(store, f)))
                 for f in sorted(os.listdir(store)) if re.search("00(changelog|manifest)", f)]
        self.check("gen-repo lists the index and data sizes", lines[1:] == sizes,
                   str(lines[1:]))
        for name in sorted(os.listdir(want)):
            if name.endswith(".txt"):
                continue
            self.check("gen-repo makes synthetic-2000/%s" % name,
                       read(os.path.join(store, name)) == read(os.path.join(want, name)))
        self.same_as("synthetic debugindex -c", ["debugindex", repo, "-c"],
                     os.path.join(want, "00changelog.i.debugindex.txt"))
        self.same_as("synthetic debugindex -m", ["debugindex", repo, "-m"],
                     os.path.join(want, "00manifest.i.debugindex.txt"))
        self.same_as("synthetic log 5", ["log", repo, "5"], os.path.join(want, "log-l5.txt"))
        self.same_as("synthetic log 5, mapped", ["log", repo, "5", "--threshold", "1"],
                     os.path.join(want, "log-l5.txt"))
        return repo

    def mmap_checks(self, repo):
        size = os.path.getsize(os.path.join(repo, ".hg", "store", "00changelog.i"))
        for threshold, maps in ((size - 1, True), (size, True), (size + 1, False),
                                ("none", False)):
            said, err = self.peer_out("check-mmap", repo, "3", str(threshold))
            lines = (said or b"").decode().splitlines()
            mapped = any(l.startswith("mmap: ") and l.endswith("00changelog.i") for l in lines)
            self.check("check-mmap %s: hg maps 00changelog.i: %s" % (threshold, maps),
                       said is not None and mapped == maps
                       and [l for l in lines if not l.startswith("mmap: ")]
                       == ["1999", "1998", "1997"], err or str(lines))

    def other_modes(self):
        empty = os.path.join(self.scratch, "empty0")
        said, err = self.peer_out("gen-repo", empty, "--revs", "0", "--mode", "empty")
        log, _ = self.peer_out("log", empty, "5")
        self.check("gen-repo --revs 0 --mode empty: an empty log", said is not None and log == b"",
                   err)
        few = os.path.join(self.scratch, "empty3")
        self.peer_out("gen-repo", few, "--revs", "3", "--mode", "empty", "--chunk", "2")
        log, err = self.peer_out("log", few, "5")
        self.check("gen-repo --mode empty --chunk 2: 3 revisions", log == b"2\n1\n0\n", err)
        dag = os.path.join(self.scratch, "dag")
        self.peer_out("gen-repo", dag, "--revs", "50", "--mode", "builddag")
        log, err = self.peer_out("log", dag, "3")
        self.check("gen-repo --mode builddag: 50 revisions", log == b"49\n48\n47\n", err)
        index, err = self.peer_out("debugindex", dag, "data/of.i")
        self.check("builddag's file `of`: debugindex by store path",
                   index is not None and len(index.splitlines()) == 51, err)
        p = run([self.peer, "gen-repo", dag, "--revs", "1"])
        self.check("gen-repo refuses an existing directory", p.returncode == 2)
        p = run([self.peer, "gen-repo", os.path.join(self.scratch, "x"), "--revs", "1",
                 "--mode", "nope"])
        self.check("gen-repo refuses an unknown mode", p.returncode == 2
                   and not os.path.exists(os.path.join(self.scratch, "x")))

    def cache_checks(self, repo):
        data = os.path.join(repo, ".hg", "store", "00changelog.d")
        said, err = self.peer_out("evict", data)
        page = os.sysconf("SC_PAGE_SIZE")
        pages = (os.path.getsize(data) + page - 1) // page
        self.check("evict leaves no page", said == ("evicted %s: 0/%d pages resident after "
                                                    "DONTNEED\n" % (data, pages)).encode(), err)
        with open(data, "rb") as f:
            f.read()
        said, err = self.peer_out("resident", data)
        self.check("resident after a read", said is not None and said.decode().startswith(
            "%s: mincore %d/%d pages; " % (data, pages, pages)), err or str(said))
        said, err = self.peer_out("time-log", repo, "5", "--threshold", "4k", "--runs", "1")
        lines = (said or b"").decode().splitlines()
        labels = [l.split(":")[0].split() for l in lines[1:-1]]
        self.check("time-log: read and mmap, warm and cold",
                   labels == [["read", "warm"], ["read", "cold"],
                              ["mmap>=4k", "warm"], ["mmap>=4k", "cold"]], err or str(lines))


def main(peer, corpus):
    scratch = tempfile.mkdtemp(prefix="revlog-peer-selftest-")
    suite = Suite(peer, corpus, scratch)
    try:
        suite.corpus_checks()
        repo = suite.synthetic_checks()
        if repo:
            suite.mmap_checks(repo)
            suite.cache_checks(repo)
        suite.other_modes()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    check = suite.check
    print("%d passed, %d failed" % (check.passed, check.failed))
    return 1 if check.failed else 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: selftest.py PEER [CORPUS]")
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else REPO_CORPUS))
