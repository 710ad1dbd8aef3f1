package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const secretSource = "Secret eksa-system/prod-kubeconfig on the management cluster"

// apiServer answers /version over HTTPS and records the Authorization
// header of every request.
type apiServer struct {
	*httptest.Server
	caPEM []byte
	mu    sync.Mutex
	auth  []string
}

func newAPIServer(t *testing.T) *apiServer {
	t.Helper()
	s := &apiServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
	}))
	t.Cleanup(s.Close)
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return s
}

func (s *apiServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.auth)
}

// kubeconfig is one context "prod" (cluster "prod", user "prod-admin") whose
// cluster trusts the server's certificate inline; edit changes the user and
// the cluster.
func kubeconfig(t *testing.T, s *apiServer, edit func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) *clientcmdapi.Config {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	c := &clientcmdapi.Cluster{Server: s.URL, CertificateAuthorityData: s.caPEM}
	u := &clientcmdapi.AuthInfo{}
	if edit != nil {
		edit(c, u)
	}
	cfg.Clusters["prod"] = c
	cfg.AuthInfos["prod-admin"] = u
	cfg.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "prod-admin"}
	cfg.CurrentContext = "prod"
	return cfg
}

func encode(t *testing.T, cfg *clientcmdapi.Config) []byte {
	t.Helper()
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// execPlugin runs sh: it creates marker, then hands out token.
func execPlugin(marker, token string) *clientcmdapi.ExecConfig {
	return &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		Args: []string{"-c", `touch "` + marker + `"; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"` + token + `"}}'`}}
}

func connectSecret(s *apiServer, data []byte, trust bool) (*Cluster, error) {
	return Connect(context.Background(), "workload", ConnectOptions{Kubeconfig: secretSource, KubeconfigData: data, TrustKubeconfigData: trust, Timeout: 10 * time.Second})
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// A kubeconfig read from a Secret that asks for a plugin or a local file is
// refused before anything runs, any file is read or the server is contacted,
// with an error that names the Secret, the entry, the field, why, and the
// two ways out; it is not an unreachable cluster.
func TestConnectRefusesSecretKubeconfigPluginsAndFiles(t *testing.T) {
	s := newAPIServer(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "exec-ran")
	tokenFile := writeFile(t, "token", "marker-token-from-file")
	caFile := writeFile(t, "ca.crt", string(s.caPEM))
	for _, tc := range []struct {
		name   string
		edit   func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		extra  func(*clientcmdapi.Config) // entries outside the current context
		want   []string                   // entry and field of each refusal
		detail string
	}{
		{name: "exec", edit: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Exec = execPlugin(marker, "exec-token") },
			want: []string{`user "prod-admin" exec`}, detail: `run the command "/bin/sh"`},
		{name: "auth-provider", edit: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://issuer.example"}}
		}, want: []string{`user "prod-admin" auth-provider`}, detail: `"oidc" auth-provider plugin`},
		{name: "tokenFile", edit: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.TokenFile = tokenFile },
			want: []string{`user "prod-admin" tokenFile`}, detail: `send the file "` + tokenFile + `"`},
		{name: "certificate-authority", edit: func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.CertificateAuthority, u.Token = nil, caFile, "inline"
		}, want: []string{`cluster "prod" certificate-authority`}, detail: `read the file "` + caFile + `"`},
		{name: "client-certificate", edit: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.ClientCertificate = "/etc/kubernetes/pki/apiserver-kubelet-client.crt"
		},
			want: []string{`user "prod-admin" client-certificate`}, detail: `present the file "/etc/kubernetes/pki/apiserver-kubelet-client.crt"`},
		{name: "client-key", edit: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.ClientKey = "/etc/kubernetes/pki/apiserver-kubelet-client.key"
		},
			want: []string{`user "prod-admin" client-key`}, detail: `key file "/etc/kubernetes/pki/apiserver-kubelet-client.key"`},
		{name: "every entry, not only the current context's", edit: func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Token = "inline" },
			extra: func(cfg *clientcmdapi.Config) {
				cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthority: caFile}
				cfg.AuthInfos["other-admin"] = &clientcmdapi.AuthInfo{Exec: execPlugin(marker, "exec-token"), TokenFile: tokenFile}
				cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "other-admin"}
			},
			want: []string{`cluster "other" certificate-authority`, `user "other-admin" exec`, `user "other-admin" tokenFile`}, detail: `run the command "/bin/sh"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := kubeconfig(t, s, tc.edit)
			if tc.extra != nil {
				tc.extra(cfg)
			}
			_, err := connectSecret(s, encode(t, cfg), false)
			var refused *KubeconfigRefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("want a *KubeconfigRefusedError, got %T: %v", err, err)
			}
			if unreachable := new(UnreachableError); errors.As(err, &unreachable) {
				t.Errorf("a refused kubeconfig is reported as an unreachable cluster: %v", err)
			}
			var got []string
			for _, f := range refused.Refused {
				got = append(got, f.Entry+" "+f.Field)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("refused %q, want %q", got, tc.want)
			}
			msg := err.Error()
			for _, part := range []string{secretSource, tc.detail, "inline credentials into the Secret, as Cluster API does",
				"if you trust everyone who can write Secrets in eksa-system, pass --insecure-kubeconfig-secrets"} {
				if !strings.Contains(msg, part) {
					t.Errorf("the error does not say %q:\n%s", part, msg)
				}
			}
			if seen := s.seen(); len(seen) != 0 {
				t.Errorf("the server was contacted %d times (Authorization %q)", len(seen), seen)
			}
			if exists(marker) {
				t.Errorf("the exec plugin ran")
			}
		})
	}
}

// Inline credentials, as Cluster API writes them, are used as they are.
func TestConnectAcceptsInlineSecretKubeconfig(t *testing.T) {
	certPEM, keyPEM := clientCertificate(t)
	for _, tc := range []struct {
		name     string
		edit     func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		wantAuth string
	}{
		{"token", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Token = "inline-token" }, "Bearer inline-token"},
		{"client certificate data", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.ClientCertificateData, u.ClientKeyData = certPEM, keyPEM
		}, ""},
		{"username and password", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Username, u.Password = "admin", "secret" }, "Basic YWRtaW46c2VjcmV0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newAPIServer(t)
			cl, err := connectSecret(s, encode(t, kubeconfig(t, s, tc.edit)), false)
			if err != nil {
				t.Fatalf("an inline kubeconfig was refused: %v", err)
			}
			if cl.Server != s.URL || cl.CA == nil {
				t.Errorf("server %q, CA %v", cl.Server, cl.CA)
			}
			if seen := s.seen(); len(seen) == 0 || seen[0] != tc.wantAuth {
				t.Errorf("the server saw Authorization %q, want %q", seen, tc.wantAuth)
			}
		})
	}
}

// TrustKubeconfigData (--insecure-kubeconfig-secrets) gives a Secret's
// kubeconfig every feature again: the exec plugin runs and the token file is
// sent, which is what the refusal above prevents.
func TestConnectTrustKubeconfigData(t *testing.T) {
	s := newAPIServer(t)
	marker := filepath.Join(t.TempDir(), "exec-ran")
	tokenFile := writeFile(t, "token", "marker-token-from-file")
	if _, err := connectSecret(s, encode(t, kubeconfig(t, s, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Exec = execPlugin(marker, "exec-token") })), true); err != nil {
		t.Fatalf("exec with TrustKubeconfigData: %v", err)
	}
	if !exists(marker) {
		t.Errorf("the exec plugin did not run")
	}
	if _, err := connectSecret(s, encode(t, kubeconfig(t, s, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.TokenFile = tokenFile })), true); err != nil {
		t.Fatalf("tokenFile with TrustKubeconfigData: %v", err)
	}
	if seen := s.seen(); !slices.Contains(seen, "Bearer exec-token") || !slices.Contains(seen, "Bearer marker-token-from-file") {
		t.Errorf("the server saw Authorization %q", seen)
	}
}

// The operator's own kubeconfig files (--kubeconfig, --workload-kubeconfig)
// keep every feature: only kubeconfigs from Secrets are checked.
func TestConnectKubeconfigFileKeepsEveryFeature(t *testing.T) {
	s := newAPIServer(t)
	caFile := writeFile(t, "ca.crt", string(s.caPEM))
	tokenFile := writeFile(t, "token", "operator-token")
	cfg := kubeconfig(t, s, func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		c.CertificateAuthorityData, c.CertificateAuthority, u.TokenFile = nil, caFile, tokenFile
	})
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if _, err := Connect(context.Background(), "workload", ConnectOptions{Kubeconfig: path, Timeout: 10 * time.Second}); err != nil {
		t.Fatalf("the operator's kubeconfig file: %v", err)
	}
	if seen := s.seen(); len(seen) == 0 || seen[0] != "Bearer operator-token" {
		t.Errorf("the server saw Authorization %q", seen)
	}
}

// clientCertificate is a self-signed client certificate and its key, PEM.
func clientCertificate(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "prod-admin"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
