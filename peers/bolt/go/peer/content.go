package main

// dump, get and keys: the logical content as bbolt itself reads it.
//
// dump's text (one record per line, bbolt's iteration order):
//
//	bucket <path> seq=<sequence>
//	kv <path> <key hex> <value hex, or "-" if empty>
//
// <path> is the bucket names from the root, hex, joined by "/". A nested
// bucket's records come where its name sorts among its parent's keys,
// then the parent goes on. Plain keys in the root (bbolt's API cannot
// make them) would print with path "-".
//
// bbolt follows a damaged file's offsets blindly (a cursor can loop
// until memory runs out), so all three run the raw walk first and refuse
// a file it finds errors in, unless --no-precheck.

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// precheck runs the raw walk over path for command cmd. It returns -1
// when the file may be given to bbolt, else the exit code.
func precheck(cmd, path, refusal string) int {
	f, err := mapFile(path)
	if err != nil {
		return fail("%s: %v", cmd, err)
	}
	v := verify(f)
	f.close()
	if v.nErrors == 0 {
		return -1
	}
	for _, e := range v.errors {
		fmt.Fprintf(os.Stderr, "%s: precheck: %s\n", cmd, e)
	}
	fmt.Fprintf(os.Stderr, "%s: refusing to %s a file with %d structural errors (use --no-precheck to force)\n", cmd, refusal, v.nErrors)
	return 1
}

// openForReading prechecks (unless skip) and opens path read-only with
// bbolt. A nil db comes with the exit code to return.
func openForReading(cmd, path, refusal string, skip bool) (*bolt.DB, int) {
	if !skip {
		if rc := precheck(cmd, path, refusal); rc >= 0 {
			return nil, rc
		}
	}
	db, err := openExisting(path)
	if err != nil {
		return nil, fail("%s: open: %v", cmd, err)
	}
	return db, 0
}

func hexOrDash(v []byte) string {
	if len(v) == 0 {
		return "-"
	}
	return hex.EncodeToString(v)
}

func cmdDump(args []string) int {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	skip := fs.Bool("no-precheck", false, "skip the raw walk (bbolt may loop or crash on a damaged file)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		return fail("dump: need exactly one file")
	}
	db, rc := openForReading("dump", pos[0], "dump", *skip)
	if db == nil {
		return rc
	}
	defer db.Close()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	err = db.View(func(tx *bolt.Tx) error {
		dumpRecords(w, "", tx)
		return nil
	})
	if err != nil {
		return fail("dump: %v", err)
	}
	return 0
}

// container is what the root (a *bolt.Tx) and a *bolt.Bucket have in
// common for walking.
type container interface {
	Cursor() *bolt.Cursor
	Bucket(name []byte) *bolt.Bucket
}

// dumpRecords writes the records of c, whose hex path is path ("" for
// the root), descending into sub-buckets where they sort.
func dumpRecords(w *bufio.Writer, path string, c container) {
	kvPath, prefix := path, path+"/"
	if path == "" {
		kvPath, prefix = "-", ""
	}
	cur := c.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if v == nil { // bbolt's cursor gives a nil value for bucket names only
			if sub := c.Bucket(k); sub != nil {
				subPath := prefix + hex.EncodeToString(k)
				fmt.Fprintf(w, "bucket %s seq=%d\n", subPath, sub.Sequence())
				dumpRecords(w, subPath, sub)
				continue
			}
		}
		w.WriteString("kv " + kvPath + " " + hex.EncodeToString(k) + " " + hexOrDash(v) + "\n")
	}
}

// bucketPath parses BUCKET[/SUB...]: components are literal bytes, or
// hex after "0x"; with allHex every component is hex (dump's format).
func bucketPath(s string, allHex bool) ([][]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("empty bucket path")
	}
	var names [][]byte
	for _, part := range strings.Split(s, "/") {
		name := []byte(part)
		if allHex || strings.HasPrefix(part, "0x") {
			digits := part
			if !allHex {
				digits = part[2:]
			}
			var err error
			if name, err = hex.DecodeString(digits); err != nil {
				return nil, fmt.Errorf("bucket %q: %v", part, err)
			}
		}
		if len(name) == 0 {
			return nil, fmt.Errorf("empty bucket name in %q", s)
		}
		names = append(names, name)
	}
	return names, nil
}

// findBucket follows names from the root.
func findBucket(tx *bolt.Tx, names [][]byte) (*bolt.Bucket, error) {
	b := tx.Bucket(names[0])
	for _, n := range names[1:] {
		if b == nil {
			break
		}
		b = b.Bucket(n)
	}
	if b == nil {
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = hex.EncodeToString(n)
		}
		return nil, fmt.Errorf("bucket %s (hex path) not found", strings.Join(parts, "/"))
	}
	return b, nil
}

// cmdGet prints one value as hex (an empty value: an empty line). Exit 1
// if the bucket or key is missing or the key names a sub-bucket.
func cmdGet(args []string) int {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	allHex := fs.Bool("hex-path", false, "every bucket path component is hex (dump's path format)")
	skip := fs.Bool("no-precheck", false, "skip the raw walk")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 3 {
		return fail("get: usage: get FILE.db BUCKET[/SUB...] KEYHEX")
	}
	names, err := bucketPath(pos[1], *allHex)
	if err != nil {
		return fail("get: %v", err)
	}
	key, err := hex.DecodeString(strings.TrimPrefix(pos[2], "0x"))
	if err != nil || len(key) == 0 {
		return fail("get: bad key hex %q", pos[2])
	}
	db, rc := openForReading("get", pos[0], "read", *skip)
	if db == nil {
		return rc
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		b, err := findBucket(tx, names)
		if err != nil {
			fmt.Fprintf(os.Stderr, "get: %v\n", err)
			rc = 1
			return nil
		}
		v := b.Get(key)
		switch {
		case v != nil:
			fmt.Println(hex.EncodeToString(v))
		case isKey(b, key):
			// Get answers nil for a sub-bucket's name too.
			fmt.Fprintf(os.Stderr, "get: key %x is a sub-bucket\n", key)
			rc = 1
		default:
			fmt.Fprintf(os.Stderr, "get: key %x not found\n", key)
			rc = 1
		}
		return nil
	})
	if err != nil {
		return fail("get: %v", err)
	}
	return rc
}

func isKey(b *bolt.Bucket, key []byte) bool {
	k, _ := b.Cursor().Seek(key)
	return bytes.Equal(k, key)
}

// cmdKeys prints every key of one bucket (sub-bucket names too) as hex,
// in bbolt's order. Exit 1 if the bucket is missing.
func cmdKeys(args []string) int {
	fs := flag.NewFlagSet("keys", flag.ContinueOnError)
	allHex := fs.Bool("hex-path", false, "every bucket path component is hex (dump's path format)")
	skip := fs.Bool("no-precheck", false, "skip the raw walk")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 2 {
		return fail("keys: usage: keys FILE.db BUCKET[/SUB...]")
	}
	names, err := bucketPath(pos[1], *allHex)
	if err != nil {
		return fail("keys: %v", err)
	}
	db, rc := openForReading("keys", pos[0], "read", *skip)
	if db == nil {
		return rc
	}
	defer db.Close()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	err = db.View(func(tx *bolt.Tx) error {
		b, err := findBucket(tx, names)
		if err != nil {
			fmt.Fprintf(os.Stderr, "keys: %v\n", err)
			rc = 1
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			w.WriteString(hex.EncodeToString(k) + "\n")
		}
		return nil
	})
	if err != nil {
		return fail("keys: %v", err)
	}
	return rc
}
