package cli

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

const module = "github.com/eksa-metrics/eksa-metrics/"

// The offline packages (what generate and validate's file checks run on)
// reach no cluster: neither they nor anything they import pulls in
// client-go's REST client, informers or dynamic client. A live call added
// to one of them, or an import of a live package, fails here.
var offlinePackages = []string{
	"pkg/apis/metrics/v1alpha1", "pkg/spec", "pkg/render", "pkg/templates", "pkg/kubeadm",
	"pkg/components", "pkg/output", "pkg/safetext", "pkg/certs", "pkg/dashboards", "pkg/kubeproxy", "pkg/validate",
}

// Offline packages that still reach a cluster, each with the reason; the
// list only shrinks: a package on it that no longer reaches one fails too.
var offlineExceptions = map[string]string{
	"pkg/validate": "its live checks (checks.go) build cluster.Applier; they are to move behind the engine",
}

var liveClients = []string{"k8s.io/client-go/rest", "k8s.io/client-go/informers", "k8s.io/client-go/dynamic"}

func TestOfflinePackagesReachNoCluster(t *testing.T) {
	for _, pkg := range offlinePackages {
		deps := goList(t, "-deps", "./"+pkg)
		var live []string
		for _, d := range deps {
			for _, c := range liveClients {
				if d == c {
					live = append(live, d)
				}
			}
		}
		reason, excepted := offlineExceptions[pkg]
		switch {
		case len(live) > 0 && !excepted:
			t.Errorf("%s is offline but imports %s (go list -deps ./%s)", pkg, strings.Join(live, ", "), pkg)
		case len(live) == 0 && excepted:
			t.Errorf("%s reaches no cluster any more: take it off offlineExceptions (%s)", pkg, reason)
		}
	}
}

// Only the command-line driver imports cobra: the engine, the controller
// and the renderers take typed options, so that every driver can call them.
func TestOnlyTheCLIImportsCobra(t *testing.T) {
	lines := goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./cmd/...", "./config/...", "./internal/...", "./pkg/...")
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		for _, imp := range fields[1:] {
			if imp == "github.com/spf13/cobra" && pkg != "internal/cli" {
				t.Errorf("%s imports cobra; only internal/cli may", pkg)
			}
		}
	}
	if len(lines) < 20 {
		t.Fatalf("go list gave %d packages; the check is broken", len(lines))
	}
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = testutil.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var lines []string
	for s := bufio.NewScanner(bytes.NewReader(out)); s.Scan(); {
		lines = append(lines, s.Text())
	}
	return lines
}
