// Prints the code point ranges above ASCII that Go's unicode.IsPrint
// accepts (letters, marks, numbers, punctuation and symbols of the
// Unicode version the Go toolchain ships), one "lo hi" pair per line,
// in hex, both ends inclusive.
//
// bbolt's isPrintable decides with unicode.IsPrint whether `bbolt dump`,
// `keys`, `get` and `page` print a key or value as text or as hex; Go
// 1.19 (the toolchain of the bolt oracle) ships Unicode 13.0.0.
// cli/src/bolt/go_print.rs is this program's output as a
// Rust table; the bytefmt unit test runs it and compares.
//
//	GO111MODULE=off go run xtask/gen/go_isprint.go
package main

import (
	"fmt"
	"unicode"
)

func main() {
	start := -1
	for r := rune(0x80); r <= unicode.MaxRune+1; r++ {
		p := r <= unicode.MaxRune && unicode.IsPrint(r)
		if p && start < 0 {
			start = int(r)
		} else if !p && start >= 0 {
			fmt.Printf("%x %x\n", start, int(r)-1)
			start = -1
		}
	}
}
