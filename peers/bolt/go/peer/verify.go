package main

// The raw structural check: everything reachable from the current meta
// page, walked with the format reader of format.go. It reports what
// bbolt 1.3.6's Tx.Check reports (double frees, pages referenced twice,
// reachable pages on the freelist, non-tree pages in trees, pages neither
// reachable nor free) and what newer bbolt releases and a careful reader
// add (page self-identification, exact type flags, element bounds, key
// order within pages and against the parent's separators, bucket headers,
// freelist bounds, high-water mark against the file size).
//
// Messages are part of the interface: tests compare them with what our
// engine says, so their wording and their order (a depth-first walk in
// key order, then the unreachable pages in id order) are kept stable.

import (
	"bytes"
	"fmt"
)

// shownErrors caps the error messages kept; the count goes on.
const shownErrors = 200

// maxTreeDepth stops a walk that a cycle of branch pages would make endless.
const maxTreeDepth = 64

// implausibleHWM rejects a high-water mark whose bitmaps alone would not fit in memory.
const implausibleHWM = 1 << 34

type findings struct {
	errors   []string // the first shownErrors of them
	nErrors  int
	warnings []string // things bbolt tolerates (an invalid meta it falls back from, ...)
}

func (r *findings) fail(format string, a ...interface{}) {
	r.nErrors++
	if len(r.errors) < shownErrors {
		r.errors = append(r.errors, fmt.Sprintf(format, a...))
	}
}

func (r *findings) warn(format string, a ...interface{}) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, a...))
}

type treeStats struct {
	branches, leaves, overflows int
	buckets, inlineBuckets      int
	keys                        int
	maxDepth                    int
}

// verifier holds one walk's state.
type verifier struct {
	f *boltFile
	findings
	hwm            uint64
	reached, freed []bool // per page id below hwm; nil if the walk never started
	freelistSynced bool   // false for NoFreelistSync files: free = unreachable
	stats          treeStats
}

// verify walks f and returns what it found.
func verify(f *boltFile) *verifier {
	v := &verifier{f: f, hwm: f.current.hwm}
	if f.pageSize < 512 || f.pageSize&(f.pageSize-1) != 0 {
		v.warn("page size %d is not a power of two >= 512", f.pageSize)
	}
	m := f.current
	if m.hwm < 2 {
		v.fail("meta: high-water mark %d < 2", m.hwm)
		return v
	}
	if m.hwm*f.pageSize > uint64(f.size) {
		v.fail("meta: high-water mark %d pages (%d bytes) exceeds file size %d", m.hwm, m.hwm*f.pageSize, f.size)
	}
	if m.hwm > implausibleHWM {
		v.fail("meta: implausible high-water mark %d", m.hwm)
		return v
	}
	v.reached = make([]bool, m.hwm)
	v.freed = make([]bool, m.hwm)
	v.checkMetas()
	v.reached[0], v.reached[1] = true, true
	if m.root >= m.hwm {
		v.fail("meta: root page %d >= high-water mark %d", m.root, m.hwm)
	}
	if m.freelist != freelistNone {
		v.freelistSynced = true
		v.loadFreelist(m.freelist)
	}
	v.tree(m.root, nil, nil, nil, "root")
	if v.freelistSynced {
		for id := uint64(2); id < m.hwm; id++ {
			if !v.reached[id] && !v.freed[id] {
				v.fail("page %d: unreachable unfreed", id)
			}
		}
	}
	return v
}

// checkMetas looks at both meta pages' own headers. An invalid meta is
// only a warning: bbolt falls back to the other one.
func (v *verifier) checkMetas() {
	for i, m := range v.f.metas {
		if m == nil {
			continue
		}
		if p := m.problem(); p != "" {
			v.warn("meta page %d invalid (%s); bbolt falls back to the other one", i, p)
			continue
		}
		if m.pageID != uint64(i) {
			v.fail("meta page %d self-identifies as %d", i, m.pageID)
		}
		if m.pageFlags != pageMeta {
			v.fail("meta page %d has flags %#x, want %#x", i, m.pageFlags, pageMeta)
		}
		if uint64(m.pageSize) != v.f.pageSize {
			v.fail("meta page %d: page size %d differs from %d", i, m.pageSize, v.f.pageSize)
		}
	}
}

// loadFreelist marks the freelist's own run as reached and its ids as free.
func (v *verifier) loadFreelist(id uint64) {
	if id < 2 || id >= v.hwm {
		v.fail("meta: freelist page %d outside [2,%d)", id, v.hwm)
		return
	}
	ids, overflow, err := v.f.freelist(id)
	if err != nil {
		v.fail("%v", err)
	}
	for p := id; p <= id+uint64(overflow) && p < v.hwm; p++ {
		v.reached[p] = true
	}
	if id+uint64(overflow) >= v.hwm {
		v.fail("freelist page %d: overflow %d runs past high-water mark %d", id, overflow, v.hwm)
	}
	var prev uint64
	for i, free := range ids {
		if free < 2 || free >= v.hwm {
			v.fail("freelist: page id %d outside [2,%d)", free, v.hwm)
			continue
		}
		if v.freed[free] {
			v.fail("page %d: already freed", free)
		}
		v.freed[free] = true
		// bbolt writes the ids sorted; unsorted ones still load.
		if i > 0 && free <= prev {
			v.warn("freelist ids not strictly ascending at index %d (%d after %d)", i, free, prev)
		}
		prev = free
	}
}

// claim marks the run of pages [id, id+overflow] as reached; false (with
// the error reported) when one is out of bounds or already reached.
func (v *verifier) claim(id uint64, overflow uint32, path []uint64) bool {
	for p := id; p <= id+uint64(overflow); p++ {
		if p >= v.hwm {
			v.fail("page %d: out of bounds: %d (stack: %v)", p, v.hwm, path)
			return false
		}
		if v.reached[p] {
			v.fail("page %d: multiple references (stack: %v)", p, path)
			return false
		}
		v.reached[p] = true
	}
	if v.freed[id] {
		v.fail("page %d: reachable freed", id)
	}
	return true
}

// tree checks the B+tree node at page id, all of whose keys must lie in
// [lo, hi) (a nil bound is open). path lists the page ids from the
// bucket root down to the parent, for the messages; bucket names the
// bucket (hex path) the tree belongs to.
func (v *verifier) tree(id uint64, lo, hi []byte, path []uint64, bucket string) {
	path = append(path, id)
	if len(path) > maxTreeDepth {
		v.fail("page %d: tree deeper than %d levels (stack: %v)", id, maxTreeDepth, path)
		return
	}
	if id < 2 || id >= v.hwm {
		v.fail("page %d: out of bounds: %d (stack: %v)", id, v.hwm, path)
		return
	}
	r := v.f.page(id)
	if r.bytes == nil {
		v.fail("page %d: extends past end of file (overflow %d) (stack: %v)", id, r.overflow, path)
		return
	}
	if r.id() != id {
		v.fail("page %d: self-identifies as %d (stack: %v)", id, r.id(), path)
		return
	}
	if !v.claim(id, r.overflow, path) {
		return
	}
	v.stats.overflows += int(r.overflow)
	if len(path) > v.stats.maxDepth {
		v.stats.maxDepth = len(path)
	}
	switch r.flags() {
	case pageBranch:
		v.stats.branches++
		v.branch(id, r.bytes, lo, hi, path, bucket)
	case pageLeaf:
		v.stats.leaves++
		v.leaf(id, r.bytes, lo, hi, path, bucket, false)
	default:
		v.fail("page %d: invalid type: %s (stack: %v)", id, pageType(r.flags()), path)
	}
}

// element is one decoded branch or leaf element.
type element struct {
	flags uint32 // leaf only
	key   []byte
	value []byte // leaf only
	child uint64 // branch only
}

// elements decodes the element array of a page image (a page run, or an
// inline bucket's page). what names the page kind in messages. false
// when the array or an element's bytes fall outside the image.
func (v *verifier) elements(id uint64, img []byte, isLeaf bool, what string) ([]element, bool) {
	n := int(le.Uint16(img[10:]))
	if headerLen+n*elemLen > len(img) {
		v.fail("%s %d: %d elements do not fit in %d bytes", what, id, n, len(img))
		return nil, false
	}
	out := make([]element, n)
	for i := range out {
		at := headerLen + i*elemLen
		raw := img[at : at+elemLen]
		var pos, klen, vlen uint64
		if isLeaf {
			out[i].flags = le.Uint32(raw[0:])
			pos, klen, vlen = uint64(le.Uint32(raw[4:])), uint64(le.Uint32(raw[8:])), uint64(le.Uint32(raw[12:]))
		} else {
			pos, klen = uint64(le.Uint32(raw[0:])), uint64(le.Uint32(raw[4:]))
			out[i].child = le.Uint64(raw[8:])
		}
		start := uint64(at) + pos
		if start+klen+vlen > uint64(len(img)) {
			v.fail("%s %d: element %d (pos %d ksize %d vsize %d) exceeds %d-byte page span", what, id, i, pos, klen, vlen, len(img))
			return nil, false
		}
		out[i].key = img[start : start+klen]
		out[i].value = img[start+klen : start+klen+vlen]
		if klen == 0 {
			v.fail("%s %d: element %d has a zero-length key", what, id, i)
		}
	}
	return out, true
}

// keyOrder checks that the keys ascend strictly and stay in [lo, hi).
func (v *verifier) keyOrder(id uint64, es []element, lo, hi []byte, what string, path []uint64) {
	for i, e := range es {
		if i == 0 && lo != nil && bytes.Compare(e.key, lo) < 0 {
			v.fail("%s page %d: first key %x < ancestor key %x (stack: %v)", what, id, e.key, lo, path)
		}
		if i > 0 {
			prev := es[i-1].key
			if c := bytes.Compare(prev, e.key); c == 0 {
				v.fail("%s page %d: key[%d]=%x duplicates previous key (stack: %v)", what, id, i, e.key, path)
			} else if c > 0 {
				v.fail("%s page %d: key[%d]=%x < previous key %x (stack: %v)", what, id, i, e.key, prev, path)
			}
		}
		if hi != nil && bytes.Compare(e.key, hi) >= 0 {
			v.fail("%s page %d: key[%d]=%x >= next ancestor key %x (stack: %v)", what, id, i, e.key, hi, path)
		}
	}
}

func (v *verifier) branch(id uint64, img []byte, lo, hi []byte, path []uint64, bucket string) {
	es, ok := v.elements(id, img, false, "branch")
	if !ok {
		return
	}
	if len(es) == 0 {
		v.fail("branch page %d: no elements (stack: %v)", id, path)
		return
	}
	v.keyOrder(id, es, lo, hi, "branch", path)
	for i, e := range es {
		if e.child == id {
			v.fail("branch page %d: element %d points to itself", id, i)
			continue
		}
		// The subtree under element i holds keys from its separator up
		// to (excluding) the next one's, as bbolt's cursor assumes.
		upper := hi
		if i+1 < len(es) {
			upper = es[i+1].key
		}
		v.tree(e.child, e.key, upper, path, bucket)
	}
}

// leaf checks a leaf page image: a tree page (inline false) or the page
// embedded in an inline bucket's value (inline true, id = the page that
// holds that value). Sub-buckets found here are walked from here.
func (v *verifier) leaf(id uint64, img []byte, lo, hi []byte, path []uint64, bucket string, inline bool) {
	what := "leaf"
	if inline {
		what = "inline bucket page in"
	}
	es, ok := v.elements(id, img, true, what)
	if !ok {
		return
	}
	v.keyOrder(id, es, lo, hi, what, path)
	for i, e := range es {
		if e.flags&^uint32(elemIsBucket) != 0 {
			v.fail("%s %d: element %d has unknown flags %#x", what, id, i, e.flags)
		}
		if e.flags&elemIsBucket == 0 {
			v.stats.keys++
			continue
		}
		v.stats.buckets++
		name := fmt.Sprintf("%s/%x", bucket, e.key)
		if len(e.value) < bucketHdrLen {
			v.fail("%s %d: bucket %s value is %d bytes, < 16-byte header", what, id, name, len(e.value))
			continue
		}
		if inline {
			v.fail("inline bucket page in %d: contains sub-bucket %s (bbolt never inlines a bucket that has sub-buckets)", id, name)
		}
		if root := le.Uint64(e.value[0:]); root != 0 {
			v.tree(root, nil, nil, path, name)
			continue
		}
		v.stats.inlineBuckets++
		page := e.value[bucketHdrLen:]
		if len(page) < headerLen {
			v.fail("bucket %s: inline value too short for a page header (%d bytes)", name, len(page))
			continue
		}
		if fl := le.Uint16(page[8:]); fl != pageLeaf {
			v.fail("bucket %s: inline page has flags %#x, want leaf", name, fl)
			continue
		}
		v.leaf(id, page, nil, nil, path, name, true)
	}
}
