from mercurial import extensions, pycompat, util

def extsetup(ui):
    def wrapped(orig, fp, *args, **kwargs):
        ui.write(b"mmap: %s\n" % pycompat.bytestr(fp.name))
        ui.flush()
        return orig(fp, *args, **kwargs)
    extensions.wrapfunction(util, 'mmapread', wrapped)
