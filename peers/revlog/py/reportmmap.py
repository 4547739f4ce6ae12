"""A Mercurial extension for `peer check-mmap`: prints `mmap: PATH` each
time hg maps a file through util.mmapread, so a test sees hg's own
decision to map an index (the way Mercurial's test of the threshold
watches it)."""

from mercurial import extensions, pycompat, util


def _announce(ui):
    def mmapread(original, fp, *args, **kwargs):
        ui.write(b"mmap: %s\n" % pycompat.bytestr(fp.name))
        ui.flush()
        return original(fp, *args, **kwargs)

    return mmapread


def extsetup(ui):
    extensions.wrapfunction(util, "mmapread", _announce(ui))
