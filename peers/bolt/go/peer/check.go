package main

// check: the raw walk of verify.go, then bbolt's own Tx.Check. bbolt
// 1.3.x runs its check in a goroutine and can panic, fault or spin on a
// damaged file, which nothing in-process can contain, so the library half
// runs in a child process (this binary, hidden command libCheckCmd) under
// a time limit; whatever the child prints or dies of becomes "lib:" lines.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

const libCheckCmd = "__libcheck"

// libCheckLimit bounds the child: bbolt's check can loop forever on some
// damage. BOLT_PEER_CHECK_TIMEOUT (whole seconds) overrides the 60 s.
func libCheckLimit() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("BOLT_PEER_CHECK_TIMEOUT")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 60 * time.Second
}

func cmdCheck(args []string) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	rawOnly := fs.Bool("raw-only", false, "only the raw structural walk")
	libOnly := fs.Bool("lib-only", false, "only bbolt's Tx.Check")
	verbose := fs.Bool("v", false, "also print warnings and walk statistics")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		return fail("check: need exactly one file")
	}
	errs := 0
	if !*libOnly {
		errs += rawCheckReport(pos[0], *verbose)
	}
	if !*rawOnly {
		n, err := libCheckReport(pos[0])
		if err != nil {
			return fail("check: %v", err)
		}
		errs += n
	}
	if errs > 0 {
		fmt.Printf("%d errors found\n", errs)
		return 1
	}
	fmt.Println("OK")
	return 0
}

// rawCheckReport prints the raw walk's "raw:" lines and returns its error count.
func rawCheckReport(path string, verbose bool) int {
	f, err := mapFile(path)
	if err != nil {
		fmt.Printf("raw: cannot open: %v\n", err)
		return 1
	}
	defer f.close()
	v := verify(f)
	for _, e := range v.errors {
		fmt.Printf("raw: %s\n", e)
	}
	if hidden := v.nErrors - len(v.errors); hidden > 0 {
		fmt.Printf("raw: ... %d more errors not shown\n", hidden)
	}
	if verbose {
		for _, w := range v.warnings {
			fmt.Printf("raw: warning: %s\n", w)
		}
		s := v.stats
		fmt.Printf("raw: stats: page_size=%d hwm=%d txid=%d freelist_synced=%v branch_pages=%d leaf_pages=%d overflow_pages=%d buckets=%d inline_buckets=%d keys=%d max_depth=%d\n",
			f.pageSize, f.current.hwm, f.current.txid, v.freelistSynced, s.branches, s.leaves, s.overflows, s.buckets, s.inlineBuckets, s.keys, s.maxDepth)
	}
	return v.nErrors
}

// libCheckReport runs bbolt's Tx.Check in a child, prints its "lib:"
// lines and returns the number of errors. A child that dies without
// naming an error counts as one error, and its output (a panic's trace,
// say) is passed on prefixed with "lib: ".
func libCheckReport(path string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	limit := libCheckLimit()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out bytes.Buffer
	child := exec.CommandContext(ctx, self, libCheckCmd, path)
	child.Stdout, child.Stderr = &out, &out
	runErr := child.Run()
	n := 0
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		switch {
		case line == "" || line == "lib: OK":
		case strings.HasPrefix(line, "lib: "):
			fmt.Println(line)
			n++
		case runErr != nil:
			fmt.Printf("lib: %s\n", line)
		}
	}
	if runErr != nil && n == 0 {
		if ctx.Err() != nil {
			fmt.Printf("lib: bbolt Tx.Check did not finish within %v (killed)\n", limit)
		} else {
			fmt.Printf("lib: bbolt Tx.Check did not complete: %v\n", runErr)
		}
		n = 1
	}
	return n, nil
}

// cmdLibCheck is the child: open read-only, print every error of
// Tx.Check as "lib: ..." (or "lib: OK"), exit 1 if there was any.
func cmdLibCheck(args []string) int {
	if len(args) != 1 {
		return 2
	}
	db, err := openExisting(args[0])
	if err != nil {
		fmt.Printf("lib: open: %v\n", err)
		return 1
	}
	defer db.Close()
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		for e := range tx.Check() {
			fmt.Printf("lib: %v\n", e)
			n++
		}
		return nil
	})
	if err != nil {
		fmt.Printf("lib: %v\n", err)
		n++
	}
	if n > 0 {
		return 1
	}
	fmt.Println("lib: OK")
	return 0
}

// openExisting opens path read-only with bbolt, but only if it exists:
// bbolt's Open passes O_CREATE even for a read-only open, which would
// leave an empty file behind a mistyped path.
func openExisting(path string) (*bolt.DB, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	f.Close()
	return bolt.Open(path, 0444, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
}
