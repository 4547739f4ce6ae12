package main

// The bench workload, separate from its timing (bench.go) because it is
// a specification other engines replay put for put: mapwise's
// `bolt bench` generates the same streams. Change nothing here without
// changing it there and in README.md ("bench workload").

import (
	"encoding/binary"
	"fmt"
)

// splitmix64 (Steele, Lea and Flood 2014): a few lines in any language,
// which Go's math/rand is not.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// readOrderSalt separates the read-order stream from the key stream.
const readOrderSalt = 0x5851F42D4C957F2D

// workload is one bench run's puts: put p (0-based, write order) goes to
// batch p/batch, one write transaction each; in the nested modes every
// batch writes into its own sub-bucket of "bench".
type workload struct {
	count, batch     int
	keySize, valSize int
	nested           bool
	stream           []byte // the key stream: items of keySize bytes
}

func (w *workload) batches() int { return (w.count + w.batch - 1) / w.batch }

// item is key-stream item i.
func (w *workload) item(i int) []byte {
	return w.stream[i*w.keySize : (i+1)*w.keySize : (i+1)*w.keySize]
}

// In the nested modes batch b uses items b*(batch+1) (its sub-bucket's
// name) and the batch items after it (its keys); otherwise put p uses
// item p.
func (w *workload) key(p int) []byte {
	if !w.nested {
		return w.item(p)
	}
	b := p / w.batch
	return w.item(b*(w.batch+1) + 1 + p%w.batch)
}

func (w *workload) subBucket(b int) []byte { return w.item(b * (w.batch + 1)) }

// value writes put p's value into v: big-endian p+1, repeated, the last
// copy cut short.
func value(v []byte, p int) {
	var word [8]byte
	binary.BigEndian.PutUint64(word[:], uint64(p)+1)
	for off := 0; off < len(v); off += 8 {
		copy(v[off:], word[:])
	}
}

// newWorkload generates the key stream. seq modes: item i is big-endian
// i+1 in the first min(keySize, 8) bytes, zeros after. rnd modes: item i
// is the next ceil(keySize/8) splitmix64(seed) outputs, big-endian,
// concatenated and cut to keySize.
func newWorkload(mode string, count, batch, keySize, valSize int, seed uint64) (*workload, error) {
	w := &workload{count: count, batch: batch, keySize: keySize, valSize: valSize}
	w.nested = mode == "seq-nest" || mode == "rnd-nest"
	items := count
	if w.nested {
		items += w.batches()
	}
	if int64(items)*int64(keySize) > 1<<36 {
		return nil, fmt.Errorf("key stream too large (%d items of %d bytes)", items, keySize)
	}
	w.stream = make([]byte, items*keySize)
	var word [8]byte
	if mode == "seq" || mode == "seq-nest" {
		width := keySize
		if width > 8 {
			width = 8
		}
		if width < 8 && uint64(items) >= 1<<(8*uint(width)) {
			return nil, fmt.Errorf("--key-size %d too small for %d distinct sequential keys", keySize, items)
		}
		for i := 0; i < items; i++ {
			binary.BigEndian.PutUint64(word[:], uint64(i)+1)
			copy(w.item(i), word[8-width:])
		}
		return w, nil
	}
	rng := splitmix64(seed)
	for i := 0; i < items; i++ {
		it := w.item(i)
		for off := 0; off < keySize; off += 8 {
			binary.BigEndian.PutUint64(word[:], rng.next())
			copy(it[off:], word[:])
		}
	}
	return w, nil
}

// readOrder is the rnd read mode's order of puts: 0..n-1 shuffled by
// Fisher-Yates driven by splitmix64(seed ^ readOrderSalt): for i from
// n-1 down to 1, swap i with next() mod (i+1).
func readOrder(n int, seed uint64) []int32 {
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	rng := splitmix64(seed ^ readOrderSalt)
	for i := n - 1; i > 0; i-- {
		j := rng.next() % uint64(i+1)
		order[i], order[j] = order[j], order[i]
	}
	return order
}
