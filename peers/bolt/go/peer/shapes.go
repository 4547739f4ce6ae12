package main

// gen: bbolt files of known shapes, written by bbolt itself, each a pure
// function of (shape, seed, options) at the logical level. The random
// content comes from Go's math/rand seeded with --seed, and the order of
// its calls IS the content: files made earlier (testdata/bolt, caches of
// big files) must stay reproducible, so never reorder, add or drop a
// call to the generator in an existing shape. (The bytes of a file can
// still differ between runs: bbolt spills sibling sub-buckets in Go map
// order, which moves pages around.)

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

type genOptions struct {
	shape        string
	seed         int64
	size         int64 // big: target logical size in bytes
	pageSize     int
	force        bool
	keyOrder     string // big: "sorted" or "random"
	vmin, vmax   int    // big: value length range
	batch        int    // big: puts per transaction
	fill         float64
	freelistType string
	quiet        bool
}

// shapes maps each --shape to its writer.
var shapes = map[string]func(db *bolt.DB, rng *rand.Rand, o *genOptions) error{
	"small":          genSmall,
	"overflow":       genOverflow,
	"freelist":       genFreelist,
	"freelist-huge":  genFreelistHuge,
	"nofreelistsync": genNoFreelistSync,
	"big":            genBig,
}

func cmdGen(args []string) int {
	o := &genOptions{}
	var size string
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.StringVar(&o.shape, "shape", "small", "small|overflow|freelist|freelist-huge|nofreelistsync|big")
	fs.Int64Var(&o.seed, "seed", 1, "math/rand seed")
	fs.StringVar(&size, "size", "", "big: logical size to reach, e.g. 64MiB, 2GiB (default 64MiB)")
	fs.IntVar(&o.pageSize, "page-size", 0, "page size (0: bbolt's default, the OS page size; freelist-huge: 1024)")
	fs.BoolVar(&o.force, "force", false, "replace OUT if it exists")
	fs.StringVar(&o.keyOrder, "keys", "sorted", "big: sorted (ascending random-looking keys) | random (random order, slow)")
	fs.IntVar(&o.vmin, "vmin", 64, "big: shortest value")
	fs.IntVar(&o.vmax, "vmax", 1024, "big: longest value")
	fs.IntVar(&o.batch, "batch", 10000, "big: puts per write transaction")
	fs.Float64Var(&o.fill, "fill", bolt.DefaultFillPercent, "big: Bucket.FillPercent")
	fs.StringVar(&o.freelistType, "freelist-type", "array", "array|hashmap (bbolt's in-memory freelist; same bytes on disk)")
	fs.BoolVar(&o.quiet, "q", false, "print nothing on success")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		return fail("gen: need exactly one output path")
	}
	out := pos[0]
	if size != "" {
		if o.size, err = parseSize(size); err != nil {
			return fail("gen: %v", err)
		}
	}
	write, ok := shapes[o.shape]
	if !ok {
		// Checked before anything is created, so a typo leaves no file.
		return fail("gen %s: unknown shape %q", o.shape, o.shape)
	}
	if _, err := os.Stat(out); err == nil {
		if !o.force {
			return fail("gen: %s exists (use --force)", out)
		}
		if err := os.Remove(out); err != nil {
			return fail("gen: %v", err)
		}
	}
	if o.shape == "freelist-huge" && o.pageSize == 0 {
		o.pageSize = 1024 // keeps the >65535-page file near 86 MiB
	}
	opts := &bolt.Options{PageSize: o.pageSize, Timeout: 5 * time.Second, FreelistType: bolt.FreelistArrayType}
	if o.freelistType == "hashmap" {
		opts.FreelistType = bolt.FreelistMapType
	}
	opts.NoFreelistSync = o.shape == "nofreelistsync"

	start := time.Now()
	db, err := bolt.Open(out, 0644, opts)
	if err != nil {
		return fail("gen: open: %v", err)
	}
	if err := write(db, rand.New(rand.NewSource(o.seed)), o); err != nil {
		db.Close()
		return fail("gen %s: %v", o.shape, err)
	}
	if err := db.Sync(); err != nil {
		return fail("gen: sync: %v", err)
	}
	var logical int64
	_ = db.View(func(tx *bolt.Tx) error { logical = tx.Size(); return nil })
	if err := db.Close(); err != nil {
		return fail("gen: close: %v", err)
	}
	if !o.quiet {
		st, _ := os.Stat(out)
		fmt.Printf("gen: shape=%s seed=%d file=%d bytes logical=%d bytes took=%.3fs\n",
			o.shape, o.seed, st.Size(), logical, time.Since(start).Seconds())
	}
	return 0
}

// The shape writers abort a transaction with must(err): update turns the
// panic back into the transaction's error, so the writers read as the
// sequence of operations they are.

type genAbort struct{ err error }

func must(err error) {
	if err != nil {
		panic(genAbort{err})
	}
}

func mustBucket(b *bolt.Bucket, err error) *bolt.Bucket {
	must(err)
	return b
}

func update(db *bolt.DB, fn func(tx *bolt.Tx)) error {
	return db.Update(func(tx *bolt.Tx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				a, ok := r.(genAbort)
				if !ok {
					panic(r)
				}
				err = a.err
			}
		}()
		fn(tx)
		return nil
	})
}

func random(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

// randomLen draws a length in [lo, hi] (no draw at all when hi <= lo).
func randomLen(rng *rand.Rand, lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + rng.Intn(hi-lo+1)
}

func key(format string, a ...interface{}) []byte { return []byte(fmt.Sprintf(format, a...)) }

// genSmall: the common layouts in a few buckets. alpha: binary keys, an
// empty value, a sequence; beta/inner/deeper: three levels (beta and inner
// get pages because they hold buckets, deeper stays inline); gamma-inline
// and empty: inline buckets; wide: one leaf page, too big to inline;
// to-delete: dropped in the last transaction so the freelist has ids.
func genSmall(db *bolt.DB, rng *rand.Rand, _ *genOptions) error {
	err := update(db, func(tx *bolt.Tx) {
		alpha := mustBucket(tx.CreateBucket([]byte("alpha")))
		for i := 0; i < 5; i++ {
			n := randomLen(rng, 8, 40)
			must(alpha.Put(key("key-%03d", i), random(rng, n)))
		}
		must(alpha.Put([]byte{0x00}, []byte("zero-byte key")))
		must(alpha.Put([]byte{0xff, 0xfe}, random(rng, 3)))
		must(alpha.Put([]byte("empty-value"), []byte{}))
		for i := 0; i < 3; i++ {
			_, err := alpha.NextSequence()
			must(err)
		}

		beta := mustBucket(tx.CreateBucket([]byte("beta")))
		must(beta.Put([]byte("b1"), []byte("value-b1")))
		inner := mustBucket(beta.CreateBucket([]byte("inner")))
		for i := 0; i < 4; i++ {
			must(inner.Put(key("in-%d", i), random(rng, 16)))
		}
		must(inner.SetSequence(42))
		deeper := mustBucket(inner.CreateBucket([]byte("deeper")))
		must(deeper.Put([]byte("leaf"), []byte("three levels down")))
		must(beta.Put([]byte("z-last"), []byte("after the nested bucket")))

		gamma := mustBucket(tx.CreateBucket([]byte("gamma-inline")))
		for i := 0; i < 3; i++ {
			must(gamma.Put(key("g%d", i), key("small-%d", i)))
		}
		mustBucket(tx.CreateBucket([]byte("empty")))
		wide := mustBucket(tx.CreateBucket([]byte("wide")))
		for i := 0; i < 60; i++ {
			must(wide.Put(key("w%04d", i), random(rng, 40)))
		}
		doomed := mustBucket(tx.CreateBucket([]byte("to-delete")))
		for i := 0; i < 80; i++ {
			must(doomed.Put(key("d%04d", i), random(rng, 50)))
		}
	})
	if err != nil {
		return err
	}
	err = update(db, func(tx *bolt.Tx) {
		alpha := tx.Bucket([]byte("alpha"))
		must(alpha.Put([]byte("key-001"), []byte("rewritten in tx2")))
		must(alpha.Delete([]byte("key-003")))
		must(tx.Bucket([]byte("gamma-inline")).Put([]byte("g9"), []byte("added in tx2")))
	})
	if err != nil {
		return err
	}
	return update(db, func(tx *bolt.Tx) { must(tx.DeleteBucket([]byte("to-delete"))) })
}

// genOverflow: values spanning several pages, a bucket whose only value
// is too large to inline, and keys so large (3000 bytes, and one of
// bbolt's maximum 32768) that leaf and branch pages overflow. The last
// transaction rewrites one blob so its old run lands on the freelist.
func genOverflow(db *bolt.DB, rng *rand.Rand, _ *genOptions) error {
	ps := db.Info().PageSize
	err := update(db, func(tx *bolt.Tx) {
		blobs := mustBucket(tx.CreateBucket([]byte("blobs")))
		for _, n := range []int{ps - 100, ps + 1, 2 * ps, 3*ps + 17, 65536, 100000} {
			must(blobs.Put(key("blob-%07d", n), random(rng, n)))
		}
		must(blobs.Put([]byte("small-between"), []byte("tiny")))
		one := mustBucket(tx.CreateBucket([]byte("not-inline-one-value")))
		must(one.Put([]byte("v"), random(rng, ps/4+100)))
	})
	if err != nil {
		return err
	}
	err = update(db, func(tx *bolt.Tx) {
		big := mustBucket(tx.CreateBucket([]byte("bigkeys")))
		for i := 0; i < 10; i++ {
			k := make([]byte, 3000)
			prefix := copy(k, fmt.Sprintf("bigkey-%02d-", i))
			rng.Read(k[prefix:])
			must(big.Put(k, key("value-of-bigkey-%02d", i)))
		}
		k := make([]byte, bolt.MaxKeySize)
		prefix := copy(k, "maxkey-")
		rng.Read(k[prefix:])
		must(big.Put(k, []byte("max-size key")))
	})
	if err != nil {
		return err
	}
	return update(db, func(tx *bolt.Tx) {
		must(tx.Bucket([]byte("blobs")).Put(key("blob-%07d", 65536), random(rng, 70000)))
	})
}

// genFreelist: three buckets, then thirty small transactions of random
// deletes and puts in two of them, then the third dropped: many scattered
// free ids (with 1 KiB pages, enough for the freelist page to overflow).
func genFreelist(db *bolt.DB, rng *rand.Rand, _ *genOptions) error {
	names := []string{"fa", "fb", "fc"}
	err := update(db, func(tx *bolt.Tx) {
		for _, name := range names {
			b := mustBucket(tx.CreateBucket([]byte(name)))
			for i := 0; i < 450; i++ {
				n := randomLen(rng, 40, 120)
				must(b.Put(key("%s-%05d", name, i), random(rng, n)))
			}
		}
	})
	if err != nil {
		return err
	}
	for round := 0; round < 30; round++ {
		err := update(db, func(tx *bolt.Tx) {
			for _, name := range names[:2] {
				b := tx.Bucket([]byte(name))
				for j := 0; j < 15; j++ {
					must(b.Delete(key("%s-%05d", name, rng.Intn(450))))
				}
				k := key("%s-%05d", name, rng.Intn(450))
				must(b.Put(k, random(rng, 60)))
			}
		})
		if err != nil {
			return err
		}
	}
	return update(db, func(tx *bolt.Tx) { must(tx.DeleteBucket([]byte(names[2]))) })
}

// genFreelistHuge: fill more than 70000 pages, then free them all, so the
// freelist holds more than 0xFFFF ids and must use the count-in-first-slot
// encoding. A small bucket survives so the tree is not empty.
func genFreelistHuge(db *bolt.DB, rng *rand.Rand, _ *genOptions) error {
	ps := db.Info().PageSize
	var next uint64
	for {
		var pages int64
		err := update(db, func(tx *bolt.Tx) {
			b := mustBucket(tx.CreateBucketIfNotExists([]byte("bulk")))
			b.FillPercent = 1.0
			for i := 0; i < 20000; i++ {
				k := make([]byte, 8)
				binary.BigEndian.PutUint64(k, next)
				next++
				must(b.Put(k, random(rng, ps/2-40)))
			}
			pages = tx.Size() / int64(ps)
		})
		if err != nil {
			return err
		}
		if pages > 70000 {
			break
		}
	}
	err := update(db, func(tx *bolt.Tx) {
		b := mustBucket(tx.CreateBucket([]byte("survivor")))
		must(b.Put([]byte("k"), []byte("v")))
	})
	if err != nil {
		return err
	}
	return update(db, func(tx *bolt.Tx) { must(tx.DeleteBucket([]byte("bulk"))) })
}

// genNoFreelistSync (opened with NoFreelistSync by cmdGen): meta.freelist
// is the all-ones sentinel, so free pages are only "not reachable"; half
// of one bucket deleted and another dropped make sure there are some.
func genNoFreelistSync(db *bolt.DB, rng *rand.Rand, _ *genOptions) error {
	err := update(db, func(tx *bolt.Tx) {
		for _, name := range []string{"keep", "shrink", "drop"} {
			b := mustBucket(tx.CreateBucket([]byte(name)))
			for i := 0; i < 300; i++ {
				n := randomLen(rng, 20, 90)
				must(b.Put(key("%s-%04d", name, i), random(rng, n)))
			}
		}
	})
	if err != nil {
		return err
	}
	err = update(db, func(tx *bolt.Tx) {
		b := tx.Bucket([]byte("shrink"))
		for i := 0; i < 300; i += 2 {
			must(b.Delete(key("shrink-%04d", i)))
		}
	})
	if err != nil {
		return err
	}
	return update(db, func(tx *bolt.Tx) { must(tx.DeleteBucket([]byte("drop"))) })
}

// genBig: one bucket "fake-bucket" of 16-byte keys and random values, in
// transactions of --batch puts, until the logical size (high-water mark
// times page size) reaches --size. Sorted keys are a random-looking
// ascending sequence (8 bytes of running sum, 8 random bytes), so bbolt
// appends; random keys are fully random (each batch sorted, which only
// spares bbolt some node churn). Written with NoSync: one sync at the end.
func genBig(db *bolt.DB, rng *rand.Rand, o *genOptions) error {
	target := o.size
	if target <= 0 {
		target = 64 << 20
	}
	if o.vmin < 0 || o.vmax < o.vmin {
		return fmt.Errorf("bad --vmin/--vmax")
	}
	if o.batch <= 0 {
		o.batch = 10000
	}
	db.NoSync = true
	var ascending uint64
	var entries, payload int64
	start := time.Now()
	lastNote := start
	for {
		keys := make([][]byte, o.batch)
		for i := range keys {
			k := make([]byte, 16)
			if o.keyOrder == "random" {
				rng.Read(k)
			} else {
				ascending += 1 + uint64(rng.Int63n(1<<20))
				binary.BigEndian.PutUint64(k, ascending)
				rng.Read(k[8:])
			}
			keys[i] = k
		}
		if o.keyOrder == "random" {
			sort.Slice(keys, func(i, j int) bool { return string(keys[i]) < string(keys[j]) })
		}
		var logical int64
		err := update(db, func(tx *bolt.Tx) {
			b := mustBucket(tx.CreateBucketIfNotExists([]byte("fake-bucket")))
			b.FillPercent = o.fill
			for _, k := range keys {
				v := random(rng, randomLen(rng, o.vmin, o.vmax))
				must(b.Put(k, v))
				entries++
				payload += int64(len(k) + len(v))
			}
			logical = tx.Size()
		})
		if err != nil {
			return err
		}
		if !o.quiet && time.Since(lastNote) > 10*time.Second {
			lastNote = time.Now()
			fmt.Fprintf(os.Stderr, "gen big: %d entries, %d MiB logical, %.0fs\n", entries, logical>>20, time.Since(start).Seconds())
		}
		if logical >= target {
			break
		}
	}
	if !o.quiet {
		fmt.Printf("gen big: entries=%d payload=%d bytes keys=%s vsize=[%d,%d] fill=%.2f\n",
			entries, payload, o.keyOrder, o.vmin, o.vmax, o.fill)
	}
	return nil
}
