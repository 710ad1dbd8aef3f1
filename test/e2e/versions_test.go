package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// An end-to-end test because it runs every Kubernetes version of the test
// bed: the older ones are built in the second phase of make test, beside the
// integration tests.
//
// The flag and feature-gate table validate uses agrees with what the real
// binaries of the test bed accept (--help), on every Kubernetes version of the test bed.
func TestVersionTableMatchesRealBinaries(t *testing.T) {
	binaries := map[kubeadm.Component]string{kubeadm.APIServer: "kube-apiserver", kubeadm.ControllerManager: "kube-controller-manager", kubeadm.Scheduler: "kube-scheduler"}
	help := func(bin string) string {
		out, _ := exec.Command(bin, "--help").CombinedOutput() // some print help and exit non-zero
		return string(out)
	}
	checked := 0
	for _, version := range testutil.KubeVersions {
		kv, err := spec.ParseKubeVersion(version)
		if err != nil {
			t.Fatal(err)
		}
		minor := kv.Minor
		for comp, name := range binaries {
			h := help(framework.Binary(t, filepath.Join("k8s", version, name)))
			for flag, since := range validate.Flags()[comp] {
				if minor >= since {
					checked++
					if !regexp.MustCompile(`(?m)^\s+--` + regexp.QuoteMeta(flag) + `\b`).MatchString(h) {
						t.Errorf("%s %s has no --%s, but the table says it does", name, version, flag)
					}
				}
			}
			for gate, since := range validate.Gates() {
				s, ok := since[comp]
				known := ok && minor >= s
				if !known {
					continue
				}
				checked++
				if !gateAccepted(t, framework.Binary(t, filepath.Join("k8s", version, name)), gate) {
					t.Errorf("%s %s refuses the feature gate %s, but the table says it knows it", name, version, gate)
				}
				if gate == kubeadm.GateStatusz || gate == kubeadm.GateFlagz {
					defaultOn := strings.Contains(h, gate+"=true|false (BETA - default=true)")
					if want := minor >= 36; defaultOn != want {
						t.Errorf("%s %s: %s on by default: %t, want %t", name, version, gate, defaultOn, want)
					}
				}
			}
			if gateAccepted(t, framework.Binary(t, filepath.Join("k8s", version, name)), "NoSuchGateForEksaMetrics") {
				t.Fatalf("%s %s accepts a made-up gate: the check cannot tell", name, version)
			}
		}
	}
	h := help(framework.Binary(t, "etcd"))
	for flag := range validate.Flags()[kubeadm.Etcd] {
		checked++
		if !strings.Contains(h, "--"+flag+" ") {
			t.Errorf("etcd has no --%s", flag)
		}
	}
	t.Logf("%d table entries checked against real --help output", checked)
}

// gateAccepted starts a binary with only a feature gate set: the gate is
// parsed with the flags, so an unknown one fails at once. (Deprecated gates
// such as KMSv1 are accepted but not listed in --help.)
func gateAccepted(t *testing.T, bin, gate string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "--feature-gates="+gate+"=true", "--bind-address=127.0.0.1", "--secure-port=0").CombinedOutput()
	return !strings.Contains(string(out), "unrecognized feature gate")
}
