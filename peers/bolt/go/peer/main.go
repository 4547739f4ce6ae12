// Command boltoracle is mapwise's bbolt peer: the tool the tests and
// benches ask when they want Go bbolt's own opinion of a file. It writes
// files of known shapes with bbolt (gen, bench), reads them back through
// bbolt (dump, get, keys, traverse, check's library half) and, because
// bbolt trusts whatever it maps, also reads the format itself without
// bbolt (check's raw half, info, pages) so a damaged file gets a report
// instead of a crash.
//
// It is built by ../../peer against Debian's packaged bbolt in GOPATH
// mode; the binary keeps the name "boltoracle" because callers join that
// name to the directory `peer build` prints. ../../README.md is the
// command reference.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A subcommand gets the arguments after its name and returns the exit
// code: 0 success, 1 a negative answer, 2 misuse or failure.
type command struct {
	name  string
	run   func(args []string) int
	usage string // "" hides it from the help text
}

// commands in help-text order.
var commands = []command{
	{"gen", cmdGen, "gen OUT.db --shape SHAPE --seed N [--size BYTES] [--page-size N] [--force] ..."},
	{"dump", cmdDump, "dump FILE.db [--no-precheck]"},
	{"check", cmdCheck, "check FILE.db [--raw-only|--lib-only] [-v]"},
	{"traverse", cmdTraverse, "traverse FILE.db [--populate] [--cold] [--residency] [--touch] [--mlock] [--bucket NAME] [--seeks N [--per-seek K] [--seed S]]"},
	{"info", cmdInfo, "info FILE.db"},
	{"pages", cmdPages, "pages FILE.db"},
	{"bench", cmdBench, "bench FILE.db --write-mode seq|rnd|seq-nest|rnd-nest --read-mode seq|rnd --count N ..."},
	{"get", cmdGet, "get FILE.db BUCKET[/SUB...] KEYHEX [--hex-path] [--no-precheck]"},
	{"keys", cmdKeys, "keys FILE.db BUCKET[/SUB...] [--hex-path] [--no-precheck]"},
	{"compact", cmdCompact, "compact -o DST.db SRC.db [--tx-max-size BYTES]"},
	{"etcd-gen", cmdEtcdGen, "etcd-gen OUT.db [--keys N] [--value-size N] [--defrag]"},
	// The library half of check, which check runs in a child process.
	{libCheckCmd, cmdLibCheck, ""},
}

func printUsage() {
	fmt.Fprintln(os.Stderr, "usage: boltoracle <command> [args]\n\ncommands:")
	for _, c := range commands {
		if c.usage != "" {
			fmt.Fprintln(os.Stderr, "  "+c.usage)
		}
	}
	fmt.Fprintln(os.Stderr, "\nsee peers/bolt/README.md for the options and output formats")
}

func main() {
	if len(os.Args) < 2 {
		printUsage()
		os.Exit(2)
	}
	name := os.Args[1]
	switch name {
	case "-h", "--help", "help":
		printUsage()
		os.Exit(0)
	}
	for _, c := range commands {
		if c.name == name {
			os.Exit(c.run(os.Args[2:]))
		}
	}
	fmt.Fprintf(os.Stderr, "boltoracle: unknown command %q\n", name)
	printUsage()
	os.Exit(2)
}

// fail reports a usage or runtime error on stderr and returns exit code 2.
func fail(format string, a ...interface{}) int {
	fmt.Fprintf(os.Stderr, "boltoracle: "+format+"\n", a...)
	return 2
}

// parseArgs runs the flag set over args in which options and positional
// arguments may be mixed in any order (the flag package alone stops at
// the first positional one) and returns the positional ones in order.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// sizeUnits are the suffixes parseSize accepts, longest first so "MiB"
// is not read as "B". All are binary multiples.
var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
	{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
	{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
}

// parseSize reads a byte count such as "65536", "64MiB", "2G" or "1.5GB"
// (case-insensitive; every unit is a power of 1024).
func parseSize(text string) (int64, error) {
	s := strings.ToUpper(strings.TrimSpace(text))
	factor := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, factor = strings.TrimSuffix(s, u.suffix), u.factor
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", text)
	}
	return int64(n * float64(factor)), nil
}
