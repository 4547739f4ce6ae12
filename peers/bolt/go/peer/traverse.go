package main

// traverse: the scan boltdb/bolt's maintainers timed when they weighed
// MAP_POPULATE: open read-only, optionally prefaulting the whole mapping,
// and walk every key of one bucket with a cursor. "took" is open plus
// walk. --cold and --residency let the caller set and see the page cache
// around it.

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

func cmdTraverse(args []string) int {
	fs := flag.NewFlagSet("traverse", flag.ContinueOnError)
	populate := fs.Bool("populate", false, "open with MmapFlags = MAP_POPULATE")
	cold := fs.Bool("cold", false, "drop the file from the page cache first (posix_fadvise DONTNEED; dirty pages stay)")
	touch := fs.Bool("touch", false, "read every value byte, not just what the cursor touches")
	mlock := fs.Bool("mlock", false, "open with Options.Mlock")
	residency := fs.Bool("residency", false, "print the share of the file in the page cache before and after")
	bucket := fs.String("bucket", "fake-bucket", "top-level bucket to walk")
	seeks := fs.Int("seeks", 0, "instead of the full walk: this many seeks to keys drawn from --seed, each followed by --per-seek keys")
	perSeek := fs.Int("per-seek", 10, "keys read from each seek (the one it lands on included)")
	seed := fs.Uint64("seed", 1, "seed of the seek keys: lo + splitmix64 % (hi - lo + 1), 8 bytes big-endian, lo and hi the first 8 bytes of the bucket's first and last keys")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		return fail("traverse: need exactly one file")
	}
	path := pos[0]
	st, err := os.Stat(path)
	if err != nil {
		return fail("traverse: %v", err)
	}
	if *cold {
		if err := dropFromCache(path); err != nil {
			return fail("traverse: evict: %v", err)
		}
	}
	if *residency {
		fmt.Printf("resident-before: %.1f%%\n", residentPercent(path))
	}
	opts := &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second, Mlock: *mlock}
	if *populate {
		opts.MmapFlags = syscall.MAP_POPULATE
	}
	start := time.Now()
	db, err := bolt.Open(path, 0444, opts)
	if err != nil {
		return fail("traverse: open: %v", err)
	}
	opened := time.Now()
	var keys, valueBytes int64
	var xor byte
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(*bucket))
		if b == nil {
			return fmt.Errorf("bucket %q not found", *bucket)
		}
		c := b.Cursor()
		visit := func(v []byte) {
			keys++
			valueBytes += int64(len(v))
			if *touch {
				for _, x := range v {
					xor ^= x
				}
			}
		}
		if *seeks > 0 {
			// Seek keys spread over the bucket's keys: the first 8 bytes
			// (zero-padded, big-endian) of its first and last keys bound them.
			prefix := func(k []byte) uint64 {
				var b [8]byte
				copy(b[:], k)
				return binary.BigEndian.Uint64(b[:])
			}
			first, _ := c.First()
			last, _ := c.Last()
			lo, hi := prefix(first), prefix(last)
			rng := splitmix64(*seed)
			for i := 0; i < *seeks && hi >= lo; i++ {
				var key [8]byte
				span := hi - lo + 1
				off := rng.next()
				if span != 0 {
					off %= span
				}
				binary.BigEndian.PutUint64(key[:], lo+off)
				k, v := c.Seek(key[:])
				for j := 0; k != nil && j < *perSeek; j++ {
					visit(v)
					k, v = c.Next()
				}
			}
			return nil
		}
		for k, v := c.First(); k != nil; k, v = c.Next() {
			visit(v)
		}
		return nil
	})
	done := time.Now()
	db.Close()
	if err != nil {
		return fail("traverse: %v", err)
	}
	fmt.Printf("file: %d bytes populate=%v cold=%v touch=%v mlock=%v\n", st.Size(), *populate, *cold, *touch, *mlock)
	fmt.Printf("open: %.3fs\n", opened.Sub(start).Seconds())
	fmt.Printf("traverse: %.3fs keys=%d value_bytes=%d xor=%02x\n", done.Sub(opened).Seconds(), keys, valueBytes, xor)
	if *residency {
		fmt.Printf("resident-after: %.1f%%\n", residentPercent(path))
	}
	fmt.Printf("took: %.3fs\n", done.Sub(start).Seconds())
	return 0
}

// dropFromCache asks the kernel to forget the file's clean cached pages;
// no root needed, unlike drop_caches.
func dropFromCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// residentPercent is the share of the file's pages in the page cache
// (mincore over a fresh mapping, which faults nothing in), or -1.
func residentPercent(path string) float64 {
	f, err := os.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return -1
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return -1
	}
	defer syscall.Munmap(m)
	pages := (len(m) + os.Getpagesize() - 1) / os.Getpagesize()
	vec := make([]byte, pages)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return -1
	}
	in := 0
	for _, b := range vec {
		in += int(b & 1)
	}
	return 100 * float64(in) / float64(pages)
}
