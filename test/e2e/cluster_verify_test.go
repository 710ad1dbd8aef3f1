package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// verifyOnCluster runs `eksa-metrics verify` against the three-node cluster
// with a spec: one passing row per target and node, the kubelets refusing
// the scraper every path its roles do not grant.
func verifyOnCluster(t *testing.T, c *framework.Cluster, specText string) (verifier, string) {
	t.Helper()
	specPath := filepath.Join(t.TempDir(), "verify.yaml")
	writeFile(t, specPath, specText)
	vr := verifier{t: t, kubeconfig: c.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters"), spec: specPath}
	v := vr.until("every row passing", func(v verifyRun) bool { return v.code == 0 })
	want := map[string]int{"kube-apiserver": 1, "kube-controller-manager": 1, "kube-scheduler": 1, "etcd": 1, "kube-proxy": len(c.Nodes), "kubelet": len(c.Nodes)}
	rows, refused := 0, 0
	for comp, n := range want {
		got := v.rows(comp)
		if len(got) != n {
			t.Errorf("%d %s rows, want %d", len(got), comp, n)
		}
		seen := map[string]bool{}
		for _, r := range got {
			rows++
			seen[r.Target.Node] = true
			if !r.Pass() || r.Samples == 0 || r.Expires == "" && !r.Target.Plain {
				t.Errorf("%s: %+v", r.Target, r)
			}
			if r.Refused != len(r.Target.Refused) {
				t.Errorf("%s: %d of %v refused", r.Target, r.Refused, r.Target.Refused)
			}
			refused += r.Refused
		}
		if n == len(c.Nodes) && len(seen) != n {
			t.Errorf("%s rows for nodes %v, want one per node", comp, seen)
		}
	}
	return vr, fmtRows(rows, refused)
}

func fmtRows(rows, refused int) string {
	return fmt.Sprintf("verify: %d rows passed, %d forbidden paths refused", rows, refused)
}

// verifyBreaks breaks the cluster one node at a time and reads the reason
// verify gives: a stopped kube-proxy proxy on one node, a kubelet that
// authorizes everyone (AlwaysAllow) on another.
func verifyBreaks(t *testing.T, c *framework.Cluster, vr verifier, proxies []*framework.Process) {
	t.Helper()
	for _, p := range proxies {
		if p.Name == "kube-rbac-proxy-kube-proxy@worker-2" {
			p.Stop()
		}
	}
	v := vr.until("kube-proxy@worker-2 failing", func(v verifyRun) bool { return v.code == cli.ExitInvalid })
	for _, r := range v.results {
		broken := r.Target.String() == "kube-proxy@worker-2"
		if broken == r.Pass() || broken && !strings.Contains(strings.Join(r.Problems, ";"), "connection refused") {
			t.Errorf("with the kube-proxy proxy on worker-2 stopped: %s: pass=%t %v", r.Target, r.Pass(), r.Problems)
		}
	}
	t.Logf("kube-proxy proxy stopped on worker-2: %s", strings.Join(problemsOf(v, "kube-proxy@worker-2"), "; "))

	c.StartKubelet(t, c.NodeOf(t, "worker-1"), "AlwaysAllow")
	v = vr.until("kubelet@worker-1 serving the unbound identity", func(v verifyRun) bool {
		for _, r := range v.rows("kubelet") {
			if r.Target.Node == "worker-1" && r.Unbound == 200 {
				return true
			}
		}
		return false
	})
	got := strings.Join(problemsOf(v, "kubelet@worker-1"), "; ")
	if !strings.Contains(got, "UNBOUND IDENTITY") || !strings.Contains(got, "THE SCRAPER IS SERVED /pods") {
		t.Errorf("kubelet@worker-1 with AlwaysAllow: %s", got)
	}
	for _, r := range v.rows("kubelet") {
		if r.Target.Node != "worker-1" && !r.Pass() {
			t.Errorf("%s: %v", r.Target, r.Problems)
		}
	}
	t.Logf("kubelet on worker-1 with --authorization-mode=AlwaysAllow: %s", got)
}

func problemsOf(v verifyRun, target string) []string {
	for _, r := range v.results {
		if r.Target.String() == target {
			return r.Problems
		}
	}
	return []string{"no such row"}
}
