package main

// info and pages: what the raw reader sees, without bbolt. info decodes
// both meta pages and the freelist header; pages prints the table of
// upstream's `bbolt pages`.

import (
	"fmt"
	"strconv"
)

func cmdInfo(args []string) int {
	if len(args) != 1 {
		return fail("info: need exactly one file")
	}
	f, err := mapFile(args[0])
	if err != nil {
		return fail("info: %v", err)
	}
	defer f.close()
	fmt.Printf("file_size=%d page_size=%d\n", f.size, f.pageSize)
	for i, m := range f.metas {
		fmt.Println(describeMeta(fmt.Sprintf("meta%d", i), m))
	}
	cur := 0
	if f.current == f.metas[1] {
		cur = 1
	}
	fmt.Printf("current=meta%d txid=%d\n", cur, f.current.txid)
	fmt.Println(describeFreelist(f))
	return 0
}

// describeMeta is one "metaN: field=value ..." line.
func describeMeta(label string, m *metaPage) string {
	if m == nil {
		return label + ": unreadable"
	}
	freelist := "freelist=" + strconv.FormatUint(m.freelist, 10)
	if m.freelist == freelistNone {
		freelist = "freelist=none(0xffffffffffffffff)"
	}
	status := "valid"
	if p := m.problem(); p != "" {
		status = "INVALID: " + p
	}
	return fmt.Sprintf("%s: page_id=%d page_flags=%#x magic=%#08x version=%d page_size=%d flags=%#x root=%d root_seq=%d %s hwm=%d txid=%d checksum=%016x %s",
		label, m.pageID, m.pageFlags, m.magic, m.version, m.pageSize, m.flags, m.root, m.rootSeq, freelist, m.hwm, m.txid, m.checksum, status)
}

// describeFreelist is the "freelist: ..." line of the current meta: where
// the freelist page is, how many ids it holds and which of the two count
// encodings it uses.
func describeFreelist(f *boltFile) string {
	id := f.current.freelist
	if id == freelistNone {
		return "freelist: not synced (NoFreelistSync); rebuilt by scanning at open"
	}
	ids, overflow, err := f.freelist(id)
	if err != nil {
		return fmt.Sprintf("freelist: error: %v", err)
	}
	encoding := "count-in-header"
	if f.page(id).count() == countInFirstID {
		encoding = "count-in-first-slot(0xFFFF)"
	}
	return fmt.Sprintf("freelist: page=%d overflow=%d ids=%d encoding=%s", id, overflow, len(ids), encoding)
}

// cmdPages prints one row per page run below the high-water mark, as
// `bbolt pages` does. Free pages (on the freelist, or when the freelist
// is not synced, unreachable) are rows of their own marked "free".
func cmdPages(args []string) int {
	if len(args) != 1 {
		return fail("pages: need exactly one file")
	}
	f, err := mapFile(args[0])
	if err != nil {
		return fail("pages: %v", err)
	}
	defer f.close()
	v := verify(f)
	free := v.freed
	if !v.freelistSynced && v.reached != nil {
		free = make([]bool, len(v.reached))
		for id := 2; id < len(free); id++ {
			free[id] = !v.reached[id]
		}
	}
	fmt.Println("ID       TYPE       ITEMS  OVRFLW")
	fmt.Println("======== ========== ====== ======")
	for id := uint64(0); id < f.current.hwm; {
		r := f.page(id)
		if r.header == nil {
			fmt.Printf("%-8d %-10s\n", id, "beyond-eof")
			break
		}
		if id < uint64(len(free)) && free[id] {
			fmt.Printf("%-8d %-10s %-6s %-6s\n", id, "free", "", "")
			id++
			continue
		}
		overflow := ""
		if r.overflow > 0 {
			overflow = strconv.FormatUint(uint64(r.overflow), 10)
		}
		fmt.Printf("%-8d %-10s %-6d %-6s\n", id, pageType(r.flags()), r.count(), overflow)
		id += 1 + uint64(r.overflow)
	}
	return 0
}
