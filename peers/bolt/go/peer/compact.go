package main

// compact is what upstream's `bbolt compact -o DST SRC` does (cmd/bbolt
// main.go, CompactCommand): open SRC read-only, create DST with SRC's
// mode and bbolt's default options, copy every bucket with bolt.Compact
// committing every --tx-max-size bytes of keys and values (default
// 65536, the command's own), and print the sizes it prints. Debian
// packages the library without the command, so the peer carries it.

import (
	"flag"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

func cmdCompact(args []string) int {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	out := fs.String("o", "", "the compacted copy (must not exist)")
	txMaxSize := fs.Int64("tx-max-size", 65536, "commit after this many bytes of keys and values")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 || *out == "" {
		return fail("compact: need -o DST and exactly one SRC")
	}
	src := pos[0]
	fi, err := os.Stat(src)
	if err != nil {
		return fail("compact: %v", err)
	}
	if _, err := os.Stat(*out); err == nil {
		return fail("compact: %s exists", *out)
	}
	sdb, err := bolt.Open(src, 0444, &bolt.Options{ReadOnly: true})
	if err != nil {
		return fail("compact: open %s: %v", src, err)
	}
	defer sdb.Close()
	ddb, err := bolt.Open(*out, fi.Mode(), nil)
	if err != nil {
		return fail("compact: open %s: %v", *out, err)
	}
	defer ddb.Close()
	if err := bolt.Compact(ddb, sdb, *txMaxSize); err != nil {
		return fail("compact: %v", err)
	}
	dfi, err := os.Stat(*out)
	if err != nil {
		return fail("compact: %v", err)
	}
	gain := float64(fi.Size()) / float64(dfi.Size())
	fmt.Printf("%d -> %d bytes (gain=%.2fx)\n", fi.Size(), dfi.Size(), gain)
	return 0
}
