package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The management components, for real: the Cluster API core manager built
// from sigs.k8s.io/cluster-api, started with the arguments eksa-metrics
// renders for capi-controller-manager, serves its metrics securely; and the
// kube-rbac-proxy sidecar eksa-metrics renders (here for the curated-packages
// controller), in front of a plain-HTTP controller-runtime endpoint (the same
// manager with --insecure-diagnostics), does too.
func TestManagementComponentsEndToEnd(t *testing.T) {
	ctx := context.Background()
	manager := framework.Binary(t, "cluster-api-manager")
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: versions[0]})
	cp.InstallCRDs(t, spec.CAPIv1beta2) // ServiceMonitor and KubeadmControlPlane
	cp.InstallCRDDir(t, "cluster-api-core")

	f, err := spec.Load("mgmt.yaml", strings.NewReader(strings.Replace(specFor("1.36", metricsv1alpha1.ExposureProxy), "  zPages:", "  managementComponents: {enabled: true}\n  zPages:", 1)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.RenderFile(f, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	for _, o := range r.Objects {
		if o.Kind() != "KubeadmControlPlane" {
			objs = append(objs, o.Object)
		}
	}
	if err := cp.Apply(ctx, framework.FieldManager, false, objs...); err != nil {
		t.Fatal(err)
	}
	edits := map[string]templates.DeploymentEdit{}
	for _, e := range r.DeploymentEdits {
		edits[e.Component.Deployment] = e
	}
	capi, packages := edits["capi-controller-manager"], edits["eks-anywhere-packages"]
	if capi.SetArgs == nil || packages.Sidecar == nil {
		t.Fatalf("missing edits: %v", edits)
	}

	admin := cp.Kubeconfig(t, "capi-manager", "kubernetes-admin", "system:masters")
	certDir := t.TempDir()
	crt, key := cp.PKI.Serving(t, "capi-webhook", []string{"localhost"}, nil)
	for src, dst := range map[string]string{crt: "tls.crt", key: "tls.key"} {
		b, _ := os.ReadFile(src)
		if err := os.WriteFile(filepath.Join(certDir, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := func() []string {
		return []string{"--kubeconfig=" + admin, "--leader-elect=false", "--webhook-cert-dir=" + certDir,
			fmt.Sprintf("--webhook-port=%d", framework.FreePort(t)), fmt.Sprintf("--health-addr=127.0.0.1:%d", framework.FreePort(t))}
	}
	// The rendered arguments, with ":8443" (every address) narrowed to the stand-in node address.
	args := base()
	for _, a := range capi.SetArgs {
		args = append(args, strings.Replace(a, "=:8443", "="+NodeIP+":8443", 1))
	}
	secure := framework.Start(t, "cluster-api-manager", manager, args)

	scraper := cp.Token(t, scraperNS, scraperSA)
	unbound := cp.Token(t, unboundNS, unboundSA)
	expect := func(name, url string, p *framework.Process) {
		t.Helper()
		client := insecureClient()
		status := func(token string) int {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := client.Do(req)
			if err != nil {
				return 0
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		framework.WaitFor(t, name+" serving the scraper", 90*time.Second, func() (bool, error) {
			c := status(scraper)
			return c == http.StatusOK, fmt.Errorf("status %d", c)
		}, p)
		if c := status(unbound); c != http.StatusForbidden {
			t.Errorf("%s: an unbound ServiceAccount got %d, want 403", name, c)
		}
		if c := status(""); c != http.StatusUnauthorized {
			t.Errorf("%s: no token got %d, want 401", name, c)
		}
	}
	expect("Cluster API manager (secure diagnostics)", "https://"+NodeIP+":8443/metrics", secure)

	// A plain-HTTP controller-runtime endpoint on 127.0.0.1:<upstream>, as the
	// packages controller serves it, and the rendered sidecar in front.
	upstream := packages.Component.UpstreamPort
	plain := framework.Start(t, "cluster-api-manager (insecure diagnostics)", manager,
		append(base(), "--insecure-diagnostics", fmt.Sprintf("--diagnostics-address=127.0.0.1:%d", upstream)))
	sidecarNode := "127.0.0.3"
	var sidecarArgs []string
	for _, a := range packages.Sidecar.Args {
		sidecarArgs = append(sidecarArgs, strings.Replace(a, "0.0.0.0:", sidecarNode+":", 1))
	}
	// In the pod it runs as the Deployment's ServiceAccount, which the rendered binding delegates.
	token := cp.Token(t, packages.Component.Namespace, packages.Component.ServiceAccount)
	sidecarArgs = append(sidecarArgs, "--kubeconfig="+cp.TokenKubeconfig(t, "packages", token))
	sidecar := framework.Start(t, "kube-rbac-proxy sidecar", framework.Binary(t, "kube-rbac-proxy"), sidecarArgs)
	expect("kube-rbac-proxy sidecar", "https://"+sidecarNode+":8443/metrics", sidecar)
	_ = plain
}
