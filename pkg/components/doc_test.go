package components_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// managementTable is the management catalog as docs/components.md shows
// it: one row per controller and range of EKS-A releases, with the upstream
// files the facts were read from.
func managementTable() string {
	var b strings.Builder
	b.WriteString("| Deployment (namespace/name) | providers | pod labels (Service selector) | EKS-A | version | ServiceAccount | how metrics are served securely | auth-delegator binding | checked against |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range components.ManagementCatalog {
		providers := strings.Join(m.Providers, ", ")
		if providers == "" {
			providers = "all"
		}
		var lbls []string
		for k, v := range m.PodLabels {
			lbls = append(lbls, fmt.Sprintf("`%s: %s`", k, v))
		}
		sort.Strings(lbls)
		for i, r := range m.Releases {
			eksa := fmt.Sprintf("v0.%d", r.From.Minor)
			if i+1 < len(m.Releases) {
				if next := m.Releases[i+1].From.Minor - 1; next > r.From.Minor {
					eksa += fmt.Sprintf(" to v0.%d", next)
				}
			} else {
				eksa += " and later"
			}
			how := string(r.Method)
			switch r.Method {
			case components.Shipped:
				args := "--diagnostics-address=:8443 --insecure-diagnostics=false"
				if r.ShippedArgs != nil {
					args = strings.Join(r.ShippedArgs, " ")
				}
				how += "; apply checks `" + args + "`"
				if r.TLSFlag != "" {
					how += ", adds `" + r.TLSFlag + "` only for TLS 1.3"
				} else {
					how += "; no flag sets the TLS minimum of metrics"
				}
			case components.ShippedProxy:
				how += " (container `" + r.ProxyContainer + "`); `" + r.TLSFlag + "` only for TLS 1.3"
			case components.Sidecar:
				if r.ListenFlag != "" {
					how += fmt.Sprintf("; `%s=127.0.0.1:%d`", r.ListenFlag, r.UpstreamPort)
				} else {
					how += fmt.Sprintf("; no flag (upstream 127.0.0.1:%d)", r.UpstreamPort)
				}
			}
			if r.Note != "" {
				how += "; " + r.Note
			}
			bind := "no (its role has tokenreviews, subjectaccessreviews)"
			if r.AuthDelegator {
				bind = "yes"
			}
			switch r.Method {
			case components.Unsupported:
				bind = "none rendered"
			case components.Sidecar:
				bind = "none for its ServiceAccount: the sidecar runs as `" + templates.SidecarSA + "`, bound to `" + templates.AuthDelegator + "`"
			}
			source := r.Source
			if r.Unconfirmed != "" {
				source += "; **not confirmed**: " + r.Unconfirmed + " (a warning says so)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | `%s` | %s | %s | %s |\n", m.ID(), providers, strings.Join(lbls, ", "), eksa, r.Version, r.ServiceAccount, how, bind, source)
		}
	}
	return b.String()
}

const (
	tableStart = "<!-- management catalog: generated from pkg/components/management.go by `make update-golden` -->\n"
	tableEnd   = "<!-- end of management catalog -->\n"
)

// docs/components.md shows the catalog as it is.
func TestComponentsDocShowsTheManagementCatalog(t *testing.T) {
	path := filepath.Join(testutil.RepoRoot(), "docs", "components.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start, end := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no management catalog markers", path)
	}
	want := doc[:start+len(tableStart)] + managementTable() + doc[end:]
	testutil.Golden(t, path, []byte(want))
}

// The catalog and the release table of pkg/spec agree: the catalog was
// checked against the newest release in the table (adding a release row
// asks for its catalog rows), and each catalog row starts at a release the
// table knows.
func TestCatalogFollowsTheReleaseTable(t *testing.T) {
	if components.NewestChecked != spec.NewestEKSA {
		t.Errorf("the catalog was checked against %s, the release table ends at %s: check each controller at the new release and add its rows", components.NewestChecked, spec.NewestEKSA)
	}
	for _, m := range components.ManagementCatalog {
		if m.Releases[0].From != spec.MinEKSA {
			t.Errorf("%s starts at %s, not at %s", m.ID(), m.Releases[0].From, spec.MinEKSA)
		}
		for _, r := range m.Releases {
			if rel, known := r.From.Release(); !known || rel.Version() != r.From {
				t.Errorf("%s: a row from %s, which is not a release of the table", m.ID(), r.From)
			}
		}
	}
}
