package main

// etcd-gen: a bbolt file written by a real etcd (Debian's etcd-server,
// 3.4): start a single-member etcd on loopback ports in a temporary
// directory, put keys through its v3 JSON gateway, overwrite one, delete
// one, compact to the head revision, optionally defragment, stop it and
// copy its backend file (member/snap/db). Done here rather than in the
// shell driver so the child can be tied to this process (it gets SIGKILL
// if we die, and is stopped on every way out) and no other tool (python,
// curl, etcdctl) is needed.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func cmdEtcdGen(args []string) int {
	fs := flag.NewFlagSet("etcd-gen", flag.ContinueOnError)
	keys := fs.Int("keys", 1000, "keys to put (/oracle/key-000001 ...)")
	valueSize := fs.Int("value-size", 100, "bytes of 'v' before each value's -N suffix")
	defrag := fs.Bool("defrag", false, "defragment after the compaction")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		return fail("etcd-gen: need exactly one output path")
	}
	if *keys < 0 || *valueSize < 0 {
		return fail("etcd-gen: --keys and --value-size must be >= 0")
	}
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		return fail("etcd-gen: %v (Debian package etcd-server)", err)
	}
	dir, err := os.MkdirTemp("", "bolt-peer-etcd-")
	if err != nil {
		return fail("etcd-gen: %v", err)
	}
	defer os.RemoveAll(dir)

	e, err := startEtcd(etcdBin, dir)
	if err != nil {
		return fail("etcd-gen: %v", err)
	}
	// Stop etcd on every way out: return, error, or a signal to us.
	// (Pdeathsig covers our being killed outright.)
	var interrupted atomic.Bool
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-signals
		interrupted.Store(true)
		e.stop()
		os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "boltoracle: etcd-gen: %v, etcd stopped\n", s)
		os.Exit(1)
	}()
	defer e.stop()

	rev, err := e.load(*keys, *valueSize, *defrag)
	if err != nil && interrupted.Load() {
		select {} // the failure is the signal's doing; its handler exits
	}
	if err != nil {
		if log, _ := os.ReadFile(filepath.Join(dir, "etcd.log")); len(log) > 0 {
			os.Stderr.Write(log)
		}
		return fail("etcd-gen: %v", err)
	}
	if err := e.stop(); err != nil {
		return fail("etcd-gen: stopping etcd: %v", err)
	}
	n, err := copyFile(filepath.Join(dir, "data", "member", "snap", "db"), pos[0])
	if err != nil {
		return fail("etcd-gen: %v", err)
	}
	fmt.Fprintf(os.Stderr, "boltoracle: etcd-gen: wrote %s (%d bytes, %d keys, compacted at rev %d)\n", pos[0], n, *keys, rev)
	return 0
}

type etcdServer struct {
	cmd      *exec.Cmd
	endpoint string
	client   *http.Client
	exited   chan error
	stopOnce sync.Once
	stopErr  error
}

// freePorts asks the kernel for n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close() // held until all are picked, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func startEtcd(bin, dir string) (*etcdServer, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	log, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, "--name", "oracle", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "oracle="+peer, "--log-level", "error")
	cmd.Stdout, cmd.Stderr = log, log
	// Pdeathsig is sent when the starting OS thread ends: keep this
	// goroutine on its thread for the rest of the process.
	runtime.LockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &etcdServer{cmd: cmd, endpoint: client, client: &http.Client{Timeout: 10 * time.Second}, exited: make(chan error, 1)}
	go func() { e.exited <- cmd.Wait() }()
	if err := e.waitHealthy(20 * time.Second); err != nil {
		e.stop()
		if text, _ := os.ReadFile(log.Name()); len(text) > 0 {
			os.Stderr.Write(text)
		}
		return nil, err
	}
	return e, nil
}

func (e *etcdServer) waitHealthy(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-e.exited:
			e.exited <- err
			return fmt.Errorf("etcd exited at start: %v", err)
		default:
		}
		if resp, err := e.client.Get(e.endpoint + "/health"); err == nil {
			var h struct{ Health string }
			ok := resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Health == "true"
			resp.Body.Close()
			if ok {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("etcd not healthy within %v", limit)
}

// stop sends SIGTERM, waits up to 10 s, then SIGKILL. Safe to call
// again and from the signal handler.
func (e *etcdServer) stop() error {
	e.stopOnce.Do(func() {
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.exited:
		case <-time.After(10 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.exited
			e.stopErr = fmt.Errorf("did not stop on SIGTERM, killed")
		}
	})
	return e.stopErr
}

// call POSTs one gateway request and returns the response's header
// revision (the gateway prints int64 fields as strings).
func (e *etcdServer) call(path string, body map[string]interface{}) (int64, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	resp, err := e.client.Post(e.endpoint+path, "application/json", bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s: %s", path, resp.Status, bytes.TrimSpace(text))
	}
	var r struct {
		Header struct {
			Revision json.Number `json:"revision"`
		} `json:"header"`
	}
	if err := json.Unmarshal(text, &r); err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	if r.Header.Revision == "" {
		return 0, nil
	}
	return strconv.ParseInt(string(r.Header.Revision), 10, 64)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func etcdKey(i int) string { return fmt.Sprintf("/oracle/key-%06d", i) }

// load writes the content and returns the revision compacted at. Key i
// (from 1) gets valueSize bytes of "v" then "-i"; then key 1 is
// overwritten and key 2 deleted, so the history holds superseded
// revisions and a tombstone for the compaction to work on.
func (e *etcdServer) load(keys, valueSize int, defrag bool) (int64, error) {
	pad := string(bytes.Repeat([]byte("v"), valueSize))
	for i := 1; i <= keys; i++ {
		if _, err := e.call("/v3/kv/put", map[string]interface{}{"key": b64(etcdKey(i)), "value": b64(pad + "-" + strconv.Itoa(i))}); err != nil {
			return 0, err
		}
	}
	if _, err := e.call("/v3/kv/put", map[string]interface{}{"key": b64(etcdKey(1)), "value": b64("rewritten")}); err != nil {
		return 0, err
	}
	rev, err := e.call("/v3/kv/deleterange", map[string]interface{}{"key": b64(etcdKey(2))})
	if err != nil {
		return 0, err
	}
	// Not physical (etcdctl's default), as testdata/bolt/etcd-small.db
	// was made: etcd answers at once and removes the old revisions in the
	// background, 1000 per batch 10 ms apart, so stopping right after
	// leaves a history past 1000 revisions half compacted (meta has
	// scheduledCompactRev but no finishedCompactRev, the tombstone stays).
	if _, err := e.call("/v3/kv/compaction", map[string]interface{}{"revision": rev}); err != nil {
		return 0, err
	}
	if defrag {
		if _, err := e.call("/v3/maintenance/defragment", map[string]interface{}{}); err != nil {
			return 0, err
		}
	}
	return rev, nil
}

func copyFile(from, to string) (int64, error) {
	src, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return n, err
}
