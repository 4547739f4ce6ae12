package main

// A reader of the bbolt on-disk format that does not use bbolt. bbolt
// follows every offset it finds without checking it, so on a damaged
// file it can fault, panic or loop; this reader bounds-checks everything
// and turns damage into messages. check (raw half), info and pages are
// built on it, and dump/get/keys use it as a precheck before handing the
// file to bbolt.
//
// Layout (little-endian, as bbolt writes it on the usual platforms):
//
//	page header (16 bytes): id u64, flags u16, count u16, overflow u32
//	meta (after the header): magic u32, version u32, page size u32,
//	    flags u32, root bucket {root page u64, sequence u64},
//	    freelist page u64, high-water mark u64, txid u64, checksum u64
//	    (FNV-64a of the 56 bytes before it)
//	branch element (16 bytes): pos u32, ksize u32, child page u64
//	leaf element (16 bytes): flags u32, pos u32, ksize u32, vsize u32
//	    (pos is relative to the element itself)
//	bucket value: root page u64, sequence u64, then for an inline bucket
//	    (root 0) a whole leaf page image
//	freelist page: ids u64 after the header; a count of 0xFFFF means the
//	    real count is the first u64 and the ids follow it

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"syscall"
)

const (
	pageBranch   = 0x01
	pageLeaf     = 0x02
	pageMeta     = 0x04
	pageFreelist = 0x10

	elemIsBucket = 0x01 // leaf element flag: the value is a bucket header

	headerLen     = 16 // page header
	elemLen       = 16 // branch and leaf elements alike
	bucketHdrLen  = 16 // root page + sequence
	metaBodyLen   = 64 // meta fields after the page header
	metaSummedLen = 56 // meta bytes the checksum covers

	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	freelistNone   = ^uint64(0) // meta.freelist of a NoFreelistSync file
	countInFirstID = 0xFFFF     // freelist header count meaning "see first slot"
)

var le = binary.LittleEndian

// metaPage is one decoded meta page, valid or not.
type metaPage struct {
	pageID    uint64
	pageFlags uint16
	magic     uint32
	version   uint32
	pageSize  uint32
	flags     uint32
	root      uint64
	rootSeq   uint64
	freelist  uint64
	hwm       uint64 // high-water mark: pages in use, file-wise
	txid      uint64
	checksum  uint64 // as stored
	computed  uint64 // as recomputed
}

// decodeMeta reads the meta page at byte offset off, or returns nil when
// the file is too short to hold one there.
func decodeMeta(data []byte, off int64) *metaPage {
	if off < 0 || off+headerLen+metaBodyLen > int64(len(data)) {
		return nil
	}
	p := data[off:]
	body := p[headerLen : headerLen+metaBodyLen]
	sum := fnv.New64a()
	sum.Write(body[:metaSummedLen])
	return &metaPage{
		pageID:    le.Uint64(p[0:]),
		pageFlags: le.Uint16(p[8:]),
		magic:     le.Uint32(body[0:]),
		version:   le.Uint32(body[4:]),
		pageSize:  le.Uint32(body[8:]),
		flags:     le.Uint32(body[12:]),
		root:      le.Uint64(body[16:]),
		rootSeq:   le.Uint64(body[24:]),
		freelist:  le.Uint64(body[32:]),
		hwm:       le.Uint64(body[40:]),
		txid:      le.Uint64(body[48:]),
		checksum:  le.Uint64(body[56:]),
		computed:  sum.Sum64(),
	}
}

// problem says why bbolt would reject this meta page ("" if it would not),
// testing in bbolt's order: magic, version, checksum.
func (m *metaPage) problem() string {
	switch {
	case m.magic != boltMagic:
		return fmt.Sprintf("bad magic %#08x", m.magic)
	case m.version != boltVersion:
		return fmt.Sprintf("version %d != %d", m.version, boltVersion)
	case m.checksum != m.computed:
		return fmt.Sprintf("checksum %016x != computed %016x", m.checksum, m.computed)
	}
	return ""
}

func (m *metaPage) valid() bool { return m.problem() == "" }

// boltFile is a read-only mapping of a bbolt file with its meta pages
// decoded and the one bbolt would use selected.
type boltFile struct {
	data     []byte
	size     int64
	pageSize uint64
	metas    [2]*metaPage // nil when the file is too short for it
	current  *metaPage    // the valid meta with the higher txid
}

// mapFile maps path and picks the page size and current meta the way
// bbolt's open does: the page size of meta 0 if it is valid, otherwise
// of the first valid meta found at 1 KiB, 2 KiB, ... 16 MiB (where meta 1
// would sit for that page size); then, of the two metas, the valid one
// with the higher txid.
func mapFile(path string) (*boltFile, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("empty file")
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %v", err)
	}
	f := &boltFile{data: data, size: st.Size()}
	if err := f.selectMeta(); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

func (f *boltFile) selectMeta() error {
	first := decodeMeta(f.data, 0)
	if first == nil {
		return fmt.Errorf("file too small (%d bytes) for a meta page", len(f.data))
	}
	if first.valid() {
		f.pageSize = uint64(first.pageSize)
	} else {
		for shift := uint(0); shift <= 14; shift++ {
			off := int64(1024) << shift
			if off >= f.size-1024 {
				break
			}
			if m := decodeMeta(f.data, off); m != nil && m.valid() {
				f.pageSize = uint64(m.pageSize)
				break
			}
		}
	}
	if f.pageSize == 0 {
		return fmt.Errorf("no valid meta page found (meta0: %s)", first.problem())
	}
	f.metas[0] = first
	f.metas[1] = decodeMeta(f.data, int64(f.pageSize))
	newer, older := f.metas[0], f.metas[1]
	if older != nil && older.txid > newer.txid {
		newer, older = older, newer
	}
	switch {
	case newer != nil && newer.valid():
		f.current = newer
	case older != nil && older.valid():
		f.current = older
	default:
		return fmt.Errorf("both meta pages invalid")
	}
	return nil
}

func (f *boltFile) close() {
	if f.data != nil {
		syscall.Munmap(f.data)
		f.data = nil
	}
}

// pageRun is what the header of one page says about itself, plus its
// bytes (header, overflow pages included) when they lie inside the file.
type pageRun struct {
	header   []byte // nil: not even the header is inside the file
	bytes    []byte // nil: the run goes past the end of the file
	overflow uint32
}

func (r pageRun) id() uint64    { return le.Uint64(r.header[0:]) }
func (r pageRun) flags() uint16 { return le.Uint16(r.header[8:]) }
func (r pageRun) count() uint16 { return le.Uint16(r.header[10:]) }

// page locates page id and its overflow run.
func (f *boltFile) page(id uint64) pageRun {
	if id > (1<<62)/f.pageSize { // id*pageSize would overflow
		return pageRun{}
	}
	off := id * f.pageSize
	if off+headerLen > uint64(len(f.data)) {
		return pageRun{}
	}
	r := pageRun{header: f.data[off : off+headerLen]}
	r.overflow = le.Uint32(r.header[12:])
	if end := off + (uint64(r.overflow)+1)*f.pageSize; end <= uint64(len(f.data)) {
		r.bytes = f.data[off:end]
	}
	return r
}

// pageType names a page's flags as bbolt's tools do; anything but
// exactly one known flag is "unknown<xx>".
func pageType(flags uint16) string {
	switch flags {
	case pageBranch:
		return "branch"
	case pageLeaf:
		return "leaf"
	case pageMeta:
		return "meta"
	case pageFreelist:
		return "freelist"
	}
	return fmt.Sprintf("unknown<%02x>", flags)
}

// freelist decodes the freelist page id. The overflow count is returned
// even with an error whenever the header was readable, so the caller can
// still account for the pages the run claims.
func (f *boltFile) freelist(id uint64) (ids []uint64, overflow uint32, err error) {
	r := f.page(id)
	switch {
	case r.header == nil:
		return nil, 0, fmt.Errorf("freelist page %d beyond end of file", id)
	case r.bytes == nil:
		return nil, r.overflow, fmt.Errorf("freelist page %d: overflow %d runs past end of file", id, r.overflow)
	case r.id() != id:
		return nil, r.overflow, fmt.Errorf("freelist page %d self-identifies as %d", id, r.id())
	case r.flags() != pageFreelist:
		return nil, r.overflow, fmt.Errorf("page %d: expected freelist page, found %s", id, pageType(r.flags()))
	}
	body := r.bytes[headerLen:]
	n := uint64(r.count())
	if n == countInFirstID {
		if len(body) < 8 {
			return nil, r.overflow, fmt.Errorf("freelist page %d too short", id)
		}
		n = le.Uint64(body)
		body = body[8:]
	}
	if n > uint64(len(r.bytes)) || n*8 > uint64(len(body)) {
		return nil, r.overflow, fmt.Errorf("freelist page %d: %d ids do not fit in %d bytes", id, n, len(r.bytes))
	}
	ids = make([]uint64, n)
	for i := range ids {
		ids[i] = le.Uint64(body[8*i:])
	}
	return ids, r.overflow, nil
}
