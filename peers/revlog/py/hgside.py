"""Helpers that need Mercurial's own modules; run with the interpreter of
hg's #! line (the peer script finds it).

    hgside.py linear DIR N CHUNK MODE   a new repository of N linear revisions
    hgside.py tracked-name STOREPATH    data/<encoded>.i -> the tracked name

`linear` commits through hg's API, one in-memory changeset per revision
and one transaction per CHUNK revisions; its output is deterministic (fixed
user, dates and contents), so testdata/revlog/synthetic-2000 is what it
makes of N = 2000 to the byte. MODE `file` rewrites the file `of` in every
revision (content `r<N>\\n`), `empty` commits no file at all.
"""

import sys

sys.dont_write_bytecode = True


def linear(path, revs, chunk, mode):
    from mercurial import context, hg, node, ui as uimod

    ui = uimod.ui.load()
    # Public commits and an unfiltered repository: hg skips per-commit work
    # that otherwise grows with the size of the repository.
    ui.setconfig(b"phases", b"new-commit", b"public")
    ui.setconfig(b"ui", b"username", b"oracle <oracle@example.invalid>")
    repo = hg.repository(ui, path.encode(), create=True).unfiltered()
    files = [b"of"] if mode == "file" else []
    parent = node.nullid

    def content_of(rev):
        def filectx(repo, changectx, name):
            return context.memfilectx(repo, changectx, name, b"r%d\n" % rev)
        return filectx

    for first in range(0, revs, chunk):
        with repo.wlock(), repo.lock(), repo.transaction(b"gen-repo"):
            for rev in range(first, min(revs, first + chunk)):
                ctx = context.memctx(repo, [parent, None], b"r%d" % rev, files,
                                     content_of(rev), date=(rev, 0), user=b"gen-repo")
                parent = repo.commitctx(ctx)


def tracked_name(store_path):
    """Exit 1 for hashed names (data/dh/...), which cannot be decoded."""
    from mercurial import store

    raw = store_path.encode()
    if raw.startswith(b"data/dh/"):
        sys.exit(1)
    decoded = store.decodefilename(raw)
    sys.stdout.write(decoded[len(b"data/"):-len(b".i")].decode())


def main(argv):
    if argv[:1] == ["linear"] and len(argv) == 5:
        linear(argv[1], int(argv[2]), int(argv[3]), argv[4])
    elif argv[:1] == ["tracked-name"] and len(argv) == 2:
        tracked_name(argv[1])
    else:
        sys.exit("usage: hgside.py linear DIR N CHUNK MODE | tracked-name STOREPATH")


if __name__ == "__main__":
    main(sys.argv[1:])
