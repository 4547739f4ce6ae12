// Command boltlegacy reads a bbolt file with the original boltdb/bolt
// 1.3.1 (Debian's golang-github-boltdb-bolt-dev), the library bbolt
// forked from, to tell whether readers that never moved to bbolt can
// still use a file. `boltlegacy check FILE` prints bolt's Tx.Check errors
// ("legacy: ..." lines, then "N errors found", exit 1) or "OK";
// `boltlegacy dump FILE` prints the content in the format of the bbolt
// peer's dump. No raw precheck: seeing where bolt 1.3.1 itself fails is
// the point.
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/boltdb/bolt"
)

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "check" && os.Args[1] != "dump") {
		fmt.Fprintln(os.Stderr, "usage: boltlegacy check|dump FILE.db")
		os.Exit(2)
	}
	db, err := open(os.Args[2])
	if err != nil {
		fmt.Printf("legacy: open: %v\n", err)
		os.Exit(1)
	}
	rc := 0
	if os.Args[1] == "check" {
		rc = check(db)
	} else {
		dump(db)
	}
	db.Close()
	os.Exit(rc)
}

// open turns the panics bolt 1.3.1 raises at open into errors; it
// panics, for one, on a NoFreelistSync file, whose freelist page id is
// the all-ones sentinel it does not know. A missing file is an error
// before bolt sees it: its Open passes O_CREATE even when read-only.
func open(path string) (db *bolt.DB, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	f.Close()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bolt 1.3.1 panicked: %v", r)
		}
	}()
	return bolt.Open(path, 0444, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
}

func check(db *bolt.DB) int {
	n := 0
	_ = db.View(func(tx *bolt.Tx) error {
		for e := range tx.Check() {
			fmt.Printf("legacy: %v\n", e)
			n++
		}
		return nil
	})
	if n > 0 {
		fmt.Printf("%d errors found\n", n)
		return 1
	}
	fmt.Println("OK")
	return 0
}

// dump writes the records of the bbolt peer's dump format (see
// ../peer/content.go).
func dump(db *bolt.DB) {
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	_ = db.View(func(tx *bolt.Tx) error {
		records(w, "", tx)
		return nil
	})
}

type container interface {
	Cursor() *bolt.Cursor
	Bucket(name []byte) *bolt.Bucket
}

func records(w *bufio.Writer, path string, c container) {
	kvPath, prefix := path, path+"/"
	if path == "" {
		kvPath, prefix = "-", ""
	}
	cur := c.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if v == nil {
			if sub := c.Bucket(k); sub != nil {
				subPath := prefix + hex.EncodeToString(k)
				fmt.Fprintf(w, "bucket %s seq=%d\n", subPath, sub.Sequence())
				records(w, subPath, sub)
				continue
			}
		}
		fmt.Fprintf(w, "kv %s %x %s\n", kvPath, k, orDash(v))
	}
}

func orDash(v []byte) string {
	if len(v) == 0 {
		return "-"
	}
	return hex.EncodeToString(v)
}
