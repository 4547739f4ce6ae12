"""`peer make-corpus OUTDIR`: the revlog corpus (testdata/revlog).

    corpus.py PEER OUTDIR REVS

A real repository of REVS (200) commits made with `hg commit`, one by
one, with contents, messages and dates derived from the revision number
only, so it comes out the same every time (the fncache's line order
aside, which hg does not keep stable):

    a.txt        a line appended every revision (small deltas)
    src/Main.rs  rewritten every 3rd revision
    docs/README  a line appended every 10th revision (upper case: the store
                 encodes the name as data/docs/_r_e_a_d_m_e.i)
    big.txt      24 lines of sha256 hex appended every revision, hard to
                 compress, so its revlog outgrows the 128 KiB inline limit
                 and is split into .i and .d

The store files and what hg says of them are copied to OUTDIR, and a
2000-revision repository made as `gen-repo --revs 2000` goes to
OUTDIR/synthetic-2000 (a changelog too large to stay inline).
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

HG = os.environ.get("HG", "hg")

STORE_FILES = ["00changelog.i", "00changelog.d", "00manifest.i", "00manifest.d",
               "data/a.txt.i", "data/big.txt.i", "data/big.txt.d",
               "data/docs/_r_e_a_d_m_e.i", "data/src/_main.rs.i", "fncache", "requires"]
FILELOGS = ["data/a.txt.i", "data/big.txt.i", "data/docs/_r_e_a_d_m_e.i",
            "data/src/_main.rs.i"]


def hg(repo, *args):
    """hg's stdout (bytes) for `args` run in `repo`."""
    return subprocess.run([HG] + list(args), cwd=repo, check=True,
                          stdout=subprocess.PIPE).stdout


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def commit_all(repo, revs):
    os.makedirs(os.path.join(repo, "src"))
    os.makedirs(os.path.join(repo, "docs"))
    for rev in range(revs):
        append(os.path.join(repo, "a.txt"), "line %d of a\n" % rev)
        if rev % 3 == 0:
            with open(os.path.join(repo, "src", "Main.rs"), "w") as f:
                f.write('fn main() {\n    println!("revision %d");\n}\n' % rev)
        if rev % 10 == 0:
            append(os.path.join(repo, "docs", "README"), "readme at %d\n" % rev)
        append(os.path.join(repo, "big.txt"),
               "".join(hashlib.sha256(("%d-%d" % (rev, k)).encode()).hexdigest() + "\n"
                       for k in range(24)))
        hg(repo, "commit", "-q", "-A", "-m", "commit %d" % rev,
           "-d", "%d 0" % (1600000000 + rev * 60))


def save(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)


def copy_store(store, names, out):
    for name in names:
        if os.path.isfile(os.path.join(store, name)):
            os.makedirs(os.path.dirname(os.path.join(out, name)), exist_ok=True)
            shutil.copyfile(os.path.join(store, name), os.path.join(out, name))


def main(peer, out, revs):
    scratch = tempfile.mkdtemp(prefix="revlog-corpus-")
    try:
        repo = os.path.join(scratch, "repo")
        hg(scratch, "init", repo)
        commit_all(repo, revs)
        store = os.path.join(repo, ".hg", "store")
        os.makedirs(out, exist_ok=True)
        copy_store(store, STORE_FILES, out)
        shutil.copyfile(os.path.join(repo, ".hg", "requires"), os.path.join(out, "repo-requires"))

        said = {
            "00changelog.i.debugindex.txt": ["debugindex", "-c"],
            "00changelog.i.debugindex-full.txt": ["--debug", "debugindex", "-c"],
            "00manifest.i.debugindex.txt": ["debugindex", "-m"],
            "00changelog.i.debugrevlogindex.txt": ["debugrevlogindex", "-v", "-c"],
            "00manifest.i.debugrevlogindex.txt": ["debugrevlogindex", "-v", "-m"],
        }
        for name, args in said.items():
            save(os.path.join(out, name), hg(repo, *args))
        for log in FILELOGS:
            save(os.path.join(out, log + ".debugindex.txt"),
                 subprocess.run([peer, "debugindex", repo, log], check=True,
                                stdout=subprocess.PIPE).stdout)
            save(os.path.join(out, log + ".debugrevlogindex.txt"),
                 hg(repo, "debugrevlogindex", "-v", ".hg/store/" + log))
        save(os.path.join(out, "log-l5.txt"), hg(repo, "log", "-l", "5", "-T", "{rev}\n"))
        save(os.path.join(out, "log-all-nodes.txt"), hg(repo, "log", "-T", "{rev}:{node}\n"))
        save(os.path.join(out, "00changelog.rev%d.debugdata.txt" % (revs - 1)),
             hg(repo, "debugdata", "-c", str(revs - 1)))
        save(os.path.join(out, "00changelog.debugrevlog.txt"), hg(repo, "debugrevlog", "-c"))
        save(os.path.join(out, "hg-version.txt"),
             hg(repo, "--version").splitlines(keepends=True)[0])

        synthetic = os.path.join(scratch, "synthetic")
        subprocess.run([peer, "gen-repo", synthetic, "--revs", "2000"], check=True,
                       stdout=subprocess.DEVNULL)
        syn_out = os.path.join(out, "synthetic-2000")
        os.makedirs(syn_out, exist_ok=True)
        copy_store(os.path.join(synthetic, ".hg", "store"),
                   ["00changelog.i", "00changelog.d", "00manifest.i", "00manifest.d",
                    "requires"], syn_out)
        save(os.path.join(syn_out, "00changelog.i.debugindex.txt"),
             hg(synthetic, "debugindex", "-c"))
        save(os.path.join(syn_out, "00manifest.i.debugindex.txt"),
             hg(synthetic, "debugindex", "-m"))
        save(os.path.join(syn_out, "log-l5.txt"),
             hg(synthetic, "log", "-l", "5", "-T", "{rev}\n"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("corpus written to %s" % out)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: corpus.py PEER OUTDIR REVS")
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
