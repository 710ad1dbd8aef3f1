package framework

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
)

// BinDir is where `make testbed` puts the binaries: $EKSA_METRICS_BIN, or
// bin/ in the checkout.
func BinDir() string {
	if d := os.Getenv("EKSA_METRICS_BIN"); d != "" {
		return d
	}
	return filepath.Join(testutil.RepoRoot(), "bin")
}

// Binary returns the path of a test-bed binary. Under `make` (which sets
// EKSA_METRICS_BIN) a missing binary fails the test; a plain `go test` skips
// with a hint instead. Under hack/test.sh the integration tests also hold
// themselves to what the first phase of the test bed installed (the list
// $EKSA_METRICS_PHASE_MANIFEST names): a binary of the second phase fails at
// once, even where a warm cache has already put it in bin/.
func Binary(t testing.TB, rel string) string {
	t.Helper()
	if err := phaseHas(rel); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(BinDir(), rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("EKSA_METRICS_BIN") != "" {
			t.Fatalf("test-bed binary %s is missing: run make testbed (%v)", p, err)
		}
		t.Skipf("test-bed binary %s is missing: run make testbed, or make integration / make e2e", p)
	}
	return p
}

var phase struct {
	once  sync.Once
	files map[string]bool
	err   error
}

// phaseHas says whether the test phase that runs may use the test-bed file
// rel (relative to BinDir): always, unless EKSA_METRICS_PHASE_MANIFEST names
// the list of what the phase's build installed.
func phaseHas(rel string) error {
	path := os.Getenv("EKSA_METRICS_PHASE_MANIFEST")
	if path == "" {
		return nil
	}
	phase.once.Do(func() {
		b, err := os.ReadFile(path)
		if err != nil {
			phase.err = fmt.Errorf("the list of what this test phase may use: %w (hack/testbed.sh integration writes it)", err)
			return
		}
		phase.files = manifestFiles(string(b))
	})
	if phase.err != nil {
		return phase.err
	}
	return phaseCheck(phase.files, rel, path)
}

// manifestFiles parses a phase manifest: one bin/-relative path a line.
func manifestFiles(text string) map[string]bool {
	files := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			files[filepath.Clean(l)] = true
		}
	}
	return files
}

// phaseCheck: rel is a file of the manifest, or (a directory, such as
// crds/cluster-api) holds one.
func phaseCheck(files map[string]bool, rel, manifest string) error {
	rel = filepath.Clean(rel)
	if files[rel] {
		return nil
	}
	for f := range files {
		if strings.HasPrefix(f, rel+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("test-bed file %s is not built by the integration phase of make test (%s lists what is): "+
		"the rest of the test bed may still be building it; move the test to test/e2e, or add the build to the integration group of hack/testbed.sh", rel, manifest)
}

// LookPath finds a system binary such as haproxy, with the same rule as Binary.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("EKSA_METRICS_BIN") != "" {
			t.Fatalf("%s is not installed: run make testbed (%v)", name, err)
		}
		t.Skipf("%s is not installed: run make testbed", name)
	}
	return p
}

// Process is a component started by a test.
type Process struct {
	Name string
	Args []string
	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan error
}

// Start runs a binary until the test ends. Its output is kept and shown when
// the test fails.
func Start(t testing.TB, name, bin string, args []string, env ...string) *Process {
	t.Helper()
	return startCmd(t, name, exec.Command(bin, args...), args, env...)
}

// startCmd starts a prepared command as a Process (args are what the logs show).
func startCmd(t testing.TB, name string, cmd *exec.Cmd, args []string, env ...string) *Process {
	t.Helper()
	p := &Process{Name: name, Args: args, log: &lockedBuffer{}, done: make(chan error, 1)}
	p.cmd = cmd
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- %s %s\n%s", name, strings.Join(args, " "), p.Tail(60))
		}
	})
	return p
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Stop ends the process (SIGTERM, then SIGKILL after 10s).
func (p *Process) Stop() {
	if done, _ := p.Exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.done <- <-p.done
	}
}

// Kill ends the process with SIGKILL, as a node failure or an OOM kill
// would: it gets no chance to clean up.
func (p *Process) Kill() {
	if done, _ := p.Exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.done <- <-p.done
}

// CPUTime is the user and system CPU time the process and the rest of its
// process group (what nsenter runs for a Host) have used so far, from
// /proc/<pid>/stat: a benchmark's figure of what a component costs.
func (p *Process) CPUTime() (time.Duration, error) {
	return groupCPUTime(p.cmd.Process.Pid)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

func groupCPUTime(pgid int) (time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	group := strconv.Itoa(pgid)
	var ticks int64
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid pgrp ... utime stime: fields 3 and 14, 15
		// counted after the command, which may hold spaces and parentheses.
		i := strings.LastIndexByte(string(raw), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 13 || f[2] != group {
			continue
		}
		for _, v := range f[11:13] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", filepath.Join("/proc", e.Name(), "stat"), err)
			}
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// Tail returns the last n lines of the process's output.
func (p *Process) Tail(n int) string {
	lines := strings.Split(p.log.String(), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Args turns kubeadm-style arguments into command-line flags, sorted.
func Args(args kubeadm.Args) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		out = append(out, fmt.Sprintf("--%s=%s", a.Name, a.Value))
	}
	sort.Strings(out)
	return out
}

// Override applies extraArgs on top of defaults, the way kubeadm does: an
// extra argument replaces the default of the same name.
func Override(defaults kubeadm.Args, extra kubeadm.Args) kubeadm.Args {
	out := defaults
	for _, a := range extra {
		out = out.Set(a.Name, a.Value)
	}
	return out
}

// FreePort returns a free TCP port on 127.0.0.1, below the kernel's
// ephemeral range: a port from that range (what "127.0.0.1:0" hands out)
// can be taken by any outgoing connection between this call and the
// server's bind, which made kube-apiserver fail with "address already in
// use" on a loaded machine. No port is handed out twice by one process.
func FreePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	low, high := 20000, ephemeralLow()
	if high-low < 1000 {
		low = 1024
	}
	for range 1000 {
		p := low + rand.IntN(high-low)
		if handedOut[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		_ = l.Close()
		handedOut[p] = true
		return p
	}
	t.Fatalf("no free port in %d-%d on 127.0.0.1", low, high)
	return 0
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// ephemeralLow is the start of the kernel's ephemeral port range (32768
// where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= 1024 {
		return 32768
	}
	return lo
}

// WaitFor polls cond until it returns true or the timeout passes.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() (bool, error), procs ...*Process) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		for _, p := range procs {
			if done, perr := p.Exited(); done {
				t.Fatalf("%s exited while waiting for %s (%v):\n%s", p.Name, what, perr, p.Tail(40))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
}
