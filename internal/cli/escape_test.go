package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
)

// apply's plan and progress on stderr quote what live objects say (a
// condition's message, a certificate's reason): a newline or a U+202E there
// cannot forge a line or reorder one.
func TestApplyOutputEscapesLiveStrings(t *testing.T) {
	forged := "ok\n  + create Secret kube-system/forged\u202e"
	var buf bytes.Buffer
	printCertificates(&buf, []*cluster.CertificateStep{{Kind: "Secret", Namespace: "kube-system", Name: "s", Action: cluster.Update, Why: forged}}, "eksa-metrics")
	buf.WriteString(describe(cluster.Event{Cluster: "workload cluster", Object: "DaemonSet kube-system/d", Action: "waiting", Message: forged}) + "\n")
	out := buf.String()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "+ create") {
			t.Errorf("a forged line: %q", line)
		}
	}
	if strings.ContainsRune(out, '\u202e') || strings.Count(out, `ok\n  + create Secret kube-system/forged\u202e`) != 2 {
		t.Errorf("not escaped:\n%s", out)
	}
}
