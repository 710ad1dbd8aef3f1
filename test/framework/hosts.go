package framework

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The simulated hosts live in network namespaces the test creates, joined by
// a bridge in the test process's own network namespace. Addresses come from
// TEST-NET-2 (198.51.100.0/24): the machine's own interfaces use other
// ranges, and nothing here can reach outside the namespaces the test made.
const (
	netnsEnv = "EKSA_METRICS_NETNS"
	bridge   = "eksa0"
	// Gateway is the test process's address on the bridge.
	Gateway = "198.51.100.1"
	subnet  = "198.51.100.0/24"
)

// RunInNetworkNamespace runs the tests of a package inside a network
// namespace of their own (TestMain calls it), where they may create hosts.
// It needs root and util-linux's unshare and nsenter and iproute2's ip; the
// first call re-runs the test binary under `unshare --net` and returns its
// exit code. Without root the tests run where they are, and NewNetwork skips.
func RunInNetworkNamespace(m *testing.M) int {
	if os.Getenv(netnsEnv) == "" {
		if os.Geteuid() != 0 {
			return m.Run()
		}
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "finding the test binary:", err)
			return 1
		}
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			fmt.Fprintln(os.Stderr, "unshare (util-linux) is missing: run make testbed")
			return 1
		}
		cmd := exec.Command(unshare, append([]string{"--net", "--", self}, os.Args[1:]...)...)
		cmd.Env = append(os.Environ(), netnsEnv+"=1")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode()
			}
			fmt.Fprintln(os.Stderr, "running the tests in a network namespace:", err)
			return 1
		}
		return 0
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", bridge, "type", "bridge"},
		{"addr", "add", Gateway + "/24", "dev", bridge},
		{"link", "set", bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "ip %s: %v: %s\n", strings.Join(args, " "), err, out)
			return 1
		}
	}
	return m.Run()
}

// InNetworkNamespace reports whether the tests run in their own network
// namespace, where hosts can be created.
func InNetworkNamespace() bool { return os.Getenv(netnsEnv) != "" }

var hostIndex struct {
	sync.Mutex
	next int
}

// Host is a simulated machine: a network namespace of its own, held open by
// a sleeping process, with one address on the bridge, its own loopback and a
// default route through the test's namespace. Processes started on it see
// only its network, as a static pod or a hostNetwork pod sees its node's.
type Host struct {
	Name string
	IP   string
	pid  int
}

// NewHost creates a host. Hosts are numbered from 198.51.100.10 up; they and
// everything started on them end with the test.
func NewHost(t testing.TB, name string) *Host {
	t.Helper()
	if !InNetworkNamespace() {
		if os.Getenv("EKSA_METRICS_BIN") != "" {
			t.Fatal("simulated hosts need the tests to run as root in a network namespace of their own (TestMain: framework.RunInNetworkNamespace)")
		}
		t.Skip("simulated hosts need root (network namespaces)")
	}
	hostIndex.Lock()
	n := hostIndex.next
	hostIndex.next++
	hostIndex.Unlock()
	if n > 200 {
		t.Fatal("too many hosts")
	}
	h := &Host{Name: name, IP: "198.51.100." + strconv.Itoa(10+n)}
	holder := exec.Command("unshare", "--net", "--", "sleep", "infinity")
	holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := holder.Start(); err != nil {
		t.Fatalf("creating host %s: %v", name, err)
	}
	h.pid = holder.Process.Pid
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_, _ = holder.Process.Wait()
	})
	// unshare has switched namespaces once /proc/<pid>/ns/net differs from ours.
	ours, _ := os.Readlink("/proc/self/ns/net")
	WaitFor(t, "the network namespace of host "+name, 10*time.Second, func() (bool, error) {
		theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", h.pid))
		return err == nil && theirs != ours, err
	})
	veth := fmt.Sprintf("veh%d", n)
	mustIP(t, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", strconv.Itoa(h.pid))
	mustIP(t, "link", "set", veth, "master", bridge, "up")
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", h.IP + "/24", "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"route", "add", "default", "via", Gateway},
	} {
		h.mustRun(t, append([]string{"ip"}, args...)...)
	}
	return h
}

// LocalAddress adds an address from TEST-NET-2 below the hosts' range
// (198.51.100.2 to .9) to the loopback interface of the test's own network
// namespace, for a process the test starts there that must be reachable at
// an address EndpointSlices accept (they refuse 127.0.0.0/8). It is removed
// when the test ends.
func LocalAddress(t testing.TB, n int) string {
	t.Helper()
	if !InNetworkNamespace() {
		if os.Getenv("EKSA_METRICS_BIN") != "" {
			t.Fatal("local addresses need the tests to run as root in a network namespace of their own (TestMain: framework.RunInNetworkNamespace)")
		}
		t.Skip("local addresses need root (network namespaces)")
	}
	if n < 2 || n > 9 {
		t.Fatalf("local address %d: only 2 to 9 are below the hosts' range", n)
	}
	ip := "198.51.100." + strconv.Itoa(n)
	mustIP(t, "addr", "add", ip+"/32", "dev", "lo")
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").Run() })
	return ip
}

func mustIP(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// command runs argv inside the host's network namespace.
func (h *Host) command(argv ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(h.pid), "-n", "--"}, argv...)...)
}

func (h *Host) mustRun(t testing.TB, argv ...string) {
	t.Helper()
	if out, err := h.command(argv...).CombinedOutput(); err != nil {
		t.Fatalf("on host %s: %s: %v: %s", h.Name, strings.Join(argv, " "), err, out)
	}
}

// Start runs a binary on the host until the test ends (see Start).
func (h *Host) Start(t testing.TB, name, bin string, args []string, env ...string) *Process {
	t.Helper()
	return startCmd(t, name, h.command(append([]string{bin}, args...)...), args, env...)
}

// podRoots are the directories StartInPod may cover with a fresh tmpfs in
// the container's mount namespace: nothing a test-bed binary needs is there.
var podRoots = []string{"/run", "/usr/local/etc"}

// StartInPod runs a binary on the host the way a container of a pod runs:
// in a mount namespace of its own, where files (the ServiceAccount token and
// CA at /var/run/secrets/kubernetes.io/serviceaccount, a ConfigMap volume)
// appear at the paths the pod mounts them, without touching the machine's
// file system. files maps such a path (under /run, /var/run or
// /usr/local/etc, covered by a tmpfs, or elsewhere under /etc, which gets an
// overlay whose upper layer is a temporary directory) to the file whose
// contents it gets.
func (h *Host) StartInPod(t testing.TB, name, bin string, args []string, files map[string]string, env ...string) *Process {
	t.Helper()
	return startCmd(t, name, h.command(podArgv(t, bin, args, files)...), args, env...)
}

// podArgv wraps a command in a private mount namespace with files mounted.
func podArgv(t testing.TB, bin string, args []string, files map[string]string) []string {
	t.Helper()
	var script strings.Builder
	script.WriteString("set -e\n")
	mounted := map[string]bool{}
	for _, dst := range sortedKeys(files) {
		p := strings.Replace(dst, "/var/run/", "/run/", 1)
		root := ""
		for _, r := range podRoots {
			if strings.HasPrefix(p, r+"/") {
				root = r
			}
		}
		switch {
		case root == "" && strings.HasPrefix(p, "/etc/"):
			// Such as /etc/prometheus/certs: /etc stays as it is underneath.
			if !mounted["/etc"] {
				mounted["/etc"] = true
				layers := t.TempDir()
				fmt.Fprintf(&script, "mkdir -p '%[1]s/upper' '%[1]s/work'\nmount -t overlay overlay -o 'lowerdir=/etc,upperdir=%[1]s/upper,workdir=%[1]s/work' /etc\n", layers)
			}
		case root == "":
			t.Fatalf("StartInPod mounts files under %v and /etc only, not %s", podRoots, dst)
		case !mounted[root]:
			mounted[root] = true
			fmt.Fprintf(&script, "mount -t tmpfs tmpfs '%s'\n", root)
		}
		fmt.Fprintf(&script, "mkdir -p '%s'\ncp '%s' '%s'\n", p[:strings.LastIndex(p, "/")], files[dst], p)
	}
	script.WriteString(`exec "$0" "$@"` + "\n")
	return append([]string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script.String(), bin}, args...)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RunInPod runs a binary to completion on the host, in a pod's mount
// namespace as StartInPod does, and returns its combined output.
func (h *Host) RunInPod(t testing.TB, bin string, args []string, files map[string]string, env ...string) (string, error) {
	t.Helper()
	cmd := h.command(podArgv(t, bin, args, files)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
