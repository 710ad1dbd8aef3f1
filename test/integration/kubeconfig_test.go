package integration

import (
	"bytes"
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// listener is the server a hostile kubeconfig Secret points at: loopback
// HTTPS that records every connection and every Authorization header.
type listener struct {
	srv   *httptest.Server
	caPEM []byte
	mu    sync.Mutex
	conns int
	auth  []string
}

func newListener(t *testing.T) *listener {
	t.Helper()
	l := &listener{}
	l.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.auth = append(l.auth, r.Header.Get("Authorization"))
		l.mu.Unlock()
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.0"}`))
	}))
	l.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			l.mu.Lock()
			l.conns++
			l.mu.Unlock()
		}
	}
	l.srv.StartTLS()
	t.Cleanup(l.srv.Close)
	l.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.srv.Certificate().Raw})
	return l
}

func (l *listener) seen() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns, slices.Clone(l.auth)
}

// kubeconfig points at the listener, trusting its certificate inline, with
// the user given.
func (l *listener) kubeconfig(t *testing.T, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: l.srv.URL, CertificateAuthorityData: l.caPEM}
	cfg.AuthInfos["attacker"] = user
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "attacker"}
	cfg.CurrentContext = "test"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// putKubeconfigSecret writes Secret eksa-system/<cluster>-kubeconfig.
func putKubeconfigSecret(t *testing.T, cp *framework.ControlPlane, cluster string, data []byte) {
	t.Helper()
	ctx := context.Background()
	secrets := cp.Client.CoreV1().Secrets("eksa-system")
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-kubeconfig", Namespace: "eksa-system"}, Data: map[string][]byte{"value": data}}
	_, err := secrets.Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// eksaMetrics runs the command line in-process, through Main: the presenter
// and the exit codes of the binary.
func eksaMetrics(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), args, cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// A workload kubeconfig read from the management cluster's Secret is not
// trusted like the operator's own: an exec plugin (which would create a
// marker file) and a tokenFile (a file holding a marker token, as a pod's
// ServiceAccount token would be) are refused by apply, verify and validate
// --kubeconfig with exit 3 and an error naming the Secret, the user, the
// field and the two ways out; the server of the Secret's choice is never
// contacted and the command never runs. With --insecure-kubeconfig-secrets
// the plugin runs and the token is sent: what the refusal prevents.
func TestKubeconfigSecretPluginsAndFilesAreRefused(t *testing.T) {
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	cp.ServiceAccount(t, "eksa-system", "default") // creates the namespace
	workloadSpec := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n", "1.36", "v0.26.1")
	raw, _ := os.ReadFile(workloadSpec)
	if err := os.WriteFile(workloadSpec, []byte(strings.Replace(string(raw), "managementCluster:\n    name: test", "managementCluster:\n    name: mgmt", 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	l := newListener(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "exec-ran")
	const markerToken = "eksa-metrics-marker-token-3b9f"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(markerToken), 0o600); err != nil {
		t.Fatal(err)
	}
	execUser := &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		Args: []string{"-c", `touch "` + marker + `"; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token"}}'`},
	}}
	tokenUser := &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	const source = "refusing the kubeconfig in Secret eksa-system/test-kubeconfig on the management cluster: "

	for _, tc := range []struct {
		name string
		user *clientcmdapi.AuthInfo
		says string
	}{
		{"exec", execUser, `user "attacker" sets exec (it would run the command "/bin/sh" on this machine)`},
		{"tokenFile", tokenUser, `user "attacker" sets tokenFile (it would send the file "` + tokenFile + `" of this machine`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			putKubeconfigSecret(t, cp, "test", l.kubeconfig(t, tc.user))
			for _, args := range [][]string{
				{"apply", "-f", workloadSpec, "--kubeconfig", kubeconfig},
				{"verify", "-f", workloadSpec, "--kubeconfig", kubeconfig},
			} {
				code, stdout, stderr := eksaMetrics(args...)
				if code != cli.ExitInvalid || stdout != "" || !strings.Contains(stderr, "\nError: "+source+tc.says) && !strings.HasPrefix(stderr, "Error: "+source+tc.says) ||
					!strings.Contains(stderr, "Write inline credentials into the Secret, as Cluster API does") ||
					!strings.Contains(stderr, "if you trust everyone who can write Secrets in eksa-system, pass --insecure-kubeconfig-secrets") {
					t.Errorf("%s: exit %d, stdout %q, stderr:\n%s", args[0], code, stdout, stderr)
				}
				if strings.Contains(stderr, markerToken) {
					t.Errorf("%s printed the token file's content:\n%s", args[0], stderr)
				}
			}
			code, res, stderr := runValidate(t, "-f", workloadSpec, "--kubeconfig", kubeconfig)
			if drift := res["drift"]; code != cli.ExitInvalid || drift.Status != validate.Fail || len(drift.Details) != 1 || !strings.Contains(drift.Details[0], source+tc.says) ||
				!strings.Contains(drift.Remediation, "--insecure-kubeconfig-secrets") {
				t.Errorf("validate: exit %d, drift %+v\n%s", code, drift, stderr)
			}
			if conns, auth := l.seen(); conns != 0 || len(auth) != 0 {
				t.Errorf("the Secret's server got %d connections, Authorization %q", conns, auth)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the exec plugin ran: %s exists", marker)
			}
		})
	}

	// The same Secrets, trusted: the plugin runs and the file's token goes to
	// the Secret's server. Only the plan is made (--dry-run=client): the
	// listener is no API server, so what follows the connection may fail.
	t.Run("--insecure-kubeconfig-secrets", func(t *testing.T) {
		putKubeconfigSecret(t, cp, "test", l.kubeconfig(t, execUser))
		_, _, stderr := eksaMetrics("apply", "-f", workloadSpec, "--kubeconfig", kubeconfig, "--dry-run=client", "--insecure-kubeconfig-secrets")
		if strings.Contains(stderr, "refusing the kubeconfig") {
			t.Fatalf("refused with --insecure-kubeconfig-secrets:\n%s", stderr)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("the exec plugin did not run with --insecure-kubeconfig-secrets: %v\n%s", err, stderr)
		}
		putKubeconfigSecret(t, cp, "test", l.kubeconfig(t, tokenUser))
		_, _, stderr = eksaMetrics("apply", "-f", workloadSpec, "--kubeconfig", kubeconfig, "--dry-run=client", "--insecure-kubeconfig-secrets")
		if _, auth := l.seen(); !slices.Contains(auth, "Bearer exec-token") || !slices.Contains(auth, "Bearer "+markerToken) {
			t.Errorf("with --insecure-kubeconfig-secrets the listener saw Authorization %q\n%s", auth, stderr)
		}
	})
}
