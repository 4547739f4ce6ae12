package main

// bench: what upstream's `bbolt bench` measures (puts per second in
// batched, fsync'd write transactions, then reads per second in one read
// transaction) on the seeded workload of workload.go, so another engine
// can run exactly the same puts and reads. Timed: the write transactions
// only (not open, close or the final sync of --no-sync), and the read
// passes only (the read-only reopen is reported apart as open_ro).

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

const benchBucket = "bench"

type benchOptions struct {
	writeMode, readMode string
	count, batch        int
	keySize, valSize    int
	fill                float64
	seed                uint64
	pageSize            int
	readMinS            float64
	noSync, populate    bool
	cold, force         bool
	json, verify        bool
}

// benchResult is the --json object; the field order is the output order.
type benchResult struct {
	WriteOps    int64   `json:"write_ops"`
	WriteS      float64 `json:"write_s"`
	ReadOps     int64   `json:"read_ops"`
	ReadS       float64 `json:"read_s"`
	FileBytes   int64   `json:"file_bytes"`
	PageSize    int     `json:"page_size"`
	OpenS       float64 `json:"open_s"`
	ReadPasses  int     `json:"read_passes"`
	WriteMode   string  `json:"write_mode"`
	ReadMode    string  `json:"read_mode"`
	Count       int     `json:"count"`
	BatchSize   int     `json:"batch_size"`
	KeySize     int     `json:"key_size"`
	ValueSize   int     `json:"value_size"`
	FillPercent float64 `json:"fill_percent"`
	Seed        uint64  `json:"seed"`
	NoSync      bool    `json:"no_sync"`
	Populate    bool    `json:"populate"`
	Cold        bool    `json:"cold"`
}

func parseBenchArgs(args []string) (*benchOptions, string, int) {
	o := &benchOptions{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.writeMode, "write-mode", "seq", "seq|rnd|seq-nest|rnd-nest")
	fs.StringVar(&o.readMode, "read-mode", "seq", "seq (one cursor pass) | rnd (Get of every put's key, seeded shuffle)")
	fs.IntVar(&o.count, "count", 1000, "puts")
	fs.IntVar(&o.batch, "batch-size", 0, "puts per write transaction (0: all in one)")
	fs.IntVar(&o.keySize, "key-size", 8, "key bytes (and sub-bucket name bytes in -nest modes)")
	fs.IntVar(&o.valSize, "value-size", 32, "value bytes")
	fs.Float64Var(&o.fill, "fill-percent", bolt.DefaultFillPercent, "Bucket.FillPercent of the written buckets")
	fs.Uint64Var(&o.seed, "seed", 42, "seed of the rnd key stream and the rnd read order")
	fs.IntVar(&o.pageSize, "page-size", 0, "page size of the new file (0: the OS page size)")
	fs.Float64Var(&o.readMinS, "read-min-s", 0, "repeat read passes until this many seconds passed (upstream: 1)")
	fs.BoolVar(&o.noSync, "no-sync", false, "DB.NoSync while writing, one untimed sync after")
	fs.BoolVar(&o.populate, "populate", false, "reopen with MmapFlags = MAP_POPULATE for the reads")
	fs.BoolVar(&o.cold, "cold", false, "drop the file from the page cache before the reads")
	fs.BoolVar(&o.force, "force", false, "replace FILE if it exists")
	fs.BoolVar(&o.json, "json", false, "one JSON object on stdout; the text lines go to stderr")
	fs.BoolVar(&o.verify, "verify", false, "after the timed part, check every value and the key count")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, "", 2
	}
	if len(pos) != 1 {
		return nil, "", fail("bench: need exactly one output file")
	}
	switch o.writeMode {
	case "seq", "rnd", "seq-nest", "rnd-nest":
	default:
		return nil, "", fail("bench: --write-mode must be seq, rnd, seq-nest or rnd-nest")
	}
	if o.readMode != "seq" && o.readMode != "rnd" {
		return nil, "", fail("bench: --read-mode must be seq or rnd")
	}
	switch {
	case o.count <= 0 || o.count > 1<<31-1:
		return nil, "", fail("bench: --count must be in [1, 2^31)")
	case o.batch < 0:
		return nil, "", fail("bench: --batch-size must be >= 0")
	case o.keySize < 1 || o.keySize > bolt.MaxKeySize:
		return nil, "", fail("bench: --key-size must be in [1, %d]", bolt.MaxKeySize)
	case o.valSize < 0 || o.valSize > bolt.MaxValueSize:
		return nil, "", fail("bench: --value-size must be in [0, %d]", bolt.MaxValueSize)
	case o.fill < 0.1 || o.fill > 1.0: // bbolt clamps to this range silently
		return nil, "", fail("bench: --fill-percent must be in [0.1, 1.0]")
	}
	if o.batch == 0 || o.batch > o.count {
		o.batch = o.count
	}
	return o, pos[0], -1
}

func cmdBench(args []string) int {
	o, path, rc := parseBenchArgs(args)
	if o == nil {
		return rc
	}
	if _, err := os.Lstat(path); err == nil {
		if !o.force {
			return fail("bench: %s exists (use --force)", path)
		}
		if err := os.Remove(path); err != nil {
			return fail("bench: %v", err)
		}
	}
	w, err := newWorkload(o.writeMode, o.count, o.batch, o.keySize, o.valSize, o.seed)
	if err != nil {
		return fail("bench: %v", err)
	}
	var order []int32
	if o.readMode == "rnd" {
		order = readOrder(o.count, o.seed)
	}

	writeTime, pageSize, err := benchWrite(path, w, o)
	if err != nil {
		return fail("bench: write: %v", err)
	}

	if o.cold {
		if err := dropFromCache(path); err != nil {
			return fail("bench: evict: %v", err)
		}
	}
	ro := &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second}
	if o.populate {
		ro.MmapFlags = syscall.MAP_POPULATE
	}
	t0 := time.Now()
	db, err := bolt.Open(path, 0444, ro)
	if err != nil {
		return fail("bench: reopen: %v", err)
	}
	openTime := time.Since(t0)
	var readOps, lastPass int64
	var passes int
	var readTime time.Duration
	err = db.View(func(tx *bolt.Tx) error {
		start := time.Now()
		for passes == 0 || time.Since(start).Seconds() < o.readMinS {
			n, err := readPass(tx, w, order)
			if err != nil {
				return err
			}
			lastPass = n
			readOps += n
			passes++
		}
		readTime = time.Since(start)
		return nil
	})
	if err != nil {
		db.Close()
		return fail("bench: read: %v", err)
	}
	if o.readMode == "seq" && lastPass != int64(o.count) {
		if o.writeMode == "seq" || o.writeMode == "seq-nest" {
			db.Close()
			return fail("bench: read: cursor saw %d keys, expected %d", lastPass, o.count)
		}
		// Random keys shorter than 8 bytes can repeat; the later put wins.
		fmt.Fprintf(os.Stderr, "bench: note: %d of %d rnd keys were duplicates (overwritten); use a larger --key-size\n", int64(o.count)-lastPass, o.count)
	}
	if o.verify {
		if err := benchVerify(db, w); err != nil {
			db.Close()
			return fail("bench: verify: %v", err)
		}
	}
	if err := db.Close(); err != nil {
		return fail("bench: close: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fail("bench: %v", err)
	}

	text := os.Stdout
	if o.json {
		text = os.Stderr
	}
	fmt.Fprintf(text, "write: %d ops in %.3f s (%.0f ops/s)\n", o.count, writeTime.Seconds(), perSecond(int64(o.count), writeTime))
	fmt.Fprintf(text, "read: %d ops in %.3f s (%.0f ops/s)\n", readOps, readTime.Seconds(), perSecond(readOps, readTime))
	fmt.Fprintf(text, "file: %d bytes page_size=%d open_ro=%.3f s passes=%d mode=%s/%s count=%d batch=%d key=%d value=%d sync=%v populate=%v\n",
		st.Size(), pageSize, openTime.Seconds(), passes, o.writeMode, o.readMode, o.count, o.batch, o.keySize, o.valSize, !o.noSync, o.populate)
	if o.json {
		out, err := json.Marshal(benchResult{
			WriteOps: int64(o.count), WriteS: writeTime.Seconds(),
			ReadOps: readOps, ReadS: readTime.Seconds(),
			FileBytes: st.Size(), PageSize: pageSize, OpenS: openTime.Seconds(), ReadPasses: passes,
			WriteMode: o.writeMode, ReadMode: o.readMode, Count: o.count, BatchSize: o.batch,
			KeySize: o.keySize, ValueSize: o.valSize, FillPercent: o.fill, Seed: o.seed,
			NoSync: o.noSync, Populate: o.populate, Cold: o.cold,
		})
		if err != nil {
			return fail("bench: %v", err)
		}
		fmt.Println(string(out))
	}
	return 0
}

func perSecond(ops int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(ops) / d.Seconds()
}

// benchWrite creates the file and runs the puts, one Update per batch,
// and returns the time of the Updates and the file's page size.
func benchWrite(path string, w *workload, o *benchOptions) (time.Duration, int, error) {
	db, err := bolt.Open(path, 0644, &bolt.Options{PageSize: o.pageSize, Timeout: 5 * time.Second})
	if err != nil {
		return 0, 0, err
	}
	db.NoSync = o.noSync
	// bbolt holds on to value slices until the commit: one buffer per
	// batch, reused by the next batch.
	values := make([]byte, o.batch*o.valSize)
	start := time.Now()
	for b := 0; b < w.batches(); b++ {
		first := b * o.batch
		last := first + o.batch
		if last > o.count {
			last = o.count
		}
		err := db.Update(func(tx *bolt.Tx) error {
			dst, err := tx.CreateBucketIfNotExists([]byte(benchBucket))
			if err != nil {
				return err
			}
			dst.FillPercent = o.fill
			if w.nested {
				if dst, err = dst.CreateBucketIfNotExists(w.subBucket(b)); err != nil {
					return err
				}
				dst.FillPercent = o.fill
			}
			for p := first; p < last; p++ {
				j := p - first
				v := values[j*o.valSize : (j+1)*o.valSize : (j+1)*o.valSize]
				value(v, p)
				if err := dst.Put(w.key(p), v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			db.Close()
			return 0, 0, fmt.Errorf("batch %d: %v", b, err)
		}
	}
	elapsed := time.Since(start)
	if o.noSync {
		if err := db.Sync(); err != nil {
			db.Close()
			return 0, 0, err
		}
	}
	pageSize := db.Info().PageSize
	return elapsed, pageSize, db.Close()
}

// readPass reads every value once and returns how many it read. Without
// an order: a cursor over "bench" (nested: over each sub-bucket in name
// order). With one: Get of each put's key in that order (nested: the
// sub-bucket handles are looked up first, inside the timing).
func readPass(tx *bolt.Tx, w *workload, order []int32) (int64, error) {
	top := tx.Bucket([]byte(benchBucket))
	if top == nil {
		return 0, fmt.Errorf("bucket %q not found", benchBucket)
	}
	if order == nil {
		return cursorPass(top, w)
	}
	var subs []*bolt.Bucket
	if w.nested {
		subs = make([]*bolt.Bucket, w.batches())
		for b := range subs {
			if subs[b] = top.Bucket(w.subBucket(b)); subs[b] == nil {
				return 0, fmt.Errorf("sub-bucket %x not found", w.subBucket(b))
			}
		}
	}
	var n int64
	b := top
	for _, p32 := range order {
		p := int(p32)
		if subs != nil {
			b = subs[p/w.batch]
		}
		k := w.key(p)
		if v := b.Get(k); v == nil || len(v) != w.valSize {
			return n, fmt.Errorf("put %d key %x: missing or bad value", p, k)
		}
		n++
	}
	return n, nil
}

func cursorPass(top *bolt.Bucket, w *workload) (int64, error) {
	var n int64
	c := top.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !w.nested {
			if v == nil {
				return n, fmt.Errorf("unexpected sub-bucket %x", k)
			}
			if len(v) != w.valSize {
				return n, fmt.Errorf("key %x: value of %d bytes, expected %d", k, len(v), w.valSize)
			}
			n++
			continue
		}
		if v != nil {
			return n, fmt.Errorf("unexpected plain key %x in %q", k, benchBucket)
		}
		sub := top.Bucket(k)
		if sub == nil {
			return n, fmt.Errorf("sub-bucket %x not found", k)
		}
		sc := sub.Cursor()
		for sk, sv := sc.First(); sk != nil; sk, sv = sc.Next() {
			if sv == nil || len(sv) != w.valSize {
				return n, fmt.Errorf("bucket %x key %x: bad value (%d bytes)", k, sk, len(sv))
			}
			n++
		}
	}
	return n, nil
}

// benchVerify (untimed): every distinct key holds the value of the last
// put to it, and the file holds nothing else.
func benchVerify(db *bolt.DB, w *workload) error {
	type where struct{ bucket, key string }
	lastPut := make(map[where]int, w.count)
	for p := 0; p < w.count; p++ {
		at := where{key: string(w.key(p))}
		if w.nested {
			at.bucket = string(w.subBucket(p / w.batch))
		}
		lastPut[at] = p
	}
	want := make([]byte, w.valSize)
	return db.View(func(tx *bolt.Tx) error {
		top := tx.Bucket([]byte(benchBucket))
		if top == nil {
			return fmt.Errorf("bucket %q not found", benchBucket)
		}
		for at, p := range lastPut {
			b := top
			if w.nested {
				if b = top.Bucket([]byte(at.bucket)); b == nil {
					return fmt.Errorf("sub-bucket %x missing", at.bucket)
				}
			}
			value(want, p)
			if v := b.Get([]byte(at.key)); v == nil || string(v) != string(want) {
				return fmt.Errorf("key %x: value %x, want %x (put %d)", at.key, v, want, p)
			}
		}
		total, err := cursorPass(top, w)
		if err != nil {
			return err
		}
		if total != int64(len(lastPut)) {
			return fmt.Errorf("file holds %d keys, workload wrote %d distinct keys", total, len(lastPut))
		}
		fmt.Fprintf(os.Stderr, "verify: OK (%d distinct keys, values match)\n", len(lastPut))
		return nil
	})
}
