package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
)

// ControlPlaneOptions configure StartControlPlane.
type ControlPlaneOptions struct {
	// Version is the Kubernetes version of the binaries, e.g. v1.36.3
	// (bin/k8s/<version>/).
	Version string
	// EtcdArgs and APIServerArgs are extraArgs applied over kubeadm's
	// defaults, as a KubeadmControlPlane would.
	EtcdArgs      kubeadm.Args
	APIServerArgs kubeadm.Args
	// Host runs etcd and the API server on a simulated host, as a kubeadm
	// control-plane node does: etcd on its loopback (2379, metrics 2381), the
	// API server on its address, port 6443, advertised there so that the
	// kubernetes Service's endpoints are real. Without it both run on
	// 127.0.0.1 with free ports.
	Host *Host
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	Version   string
	Host      *Host // nil on the test's own loopback
	Dir       string
	PKI       *PKI
	URL       string // https://127.0.0.1:<port>
	Admin     *rest.Config
	Client    kubernetes.Interface
	Dynamic   dynamic.Interface
	Etcd      *Process
	APIServer *Process

	conversionURL, conversionCA string // the KubeadmControlPlane conversion webhook, once started
}

// StartControlPlane starts etcd and kube-apiserver (RBAC, ServiceAccount
// token issuance, an admin client certificate in system:masters) and waits
// until the API server is ready.
func StartControlPlane(t testing.TB, opts ControlPlaneOptions) *ControlPlane {
	t.Helper()
	etcdBin := Binary(t, "etcd")
	apiBin := Binary(t, filepath.Join("k8s", opts.Version, "kube-apiserver"))
	dir := t.TempDir()
	cp := &ControlPlane{Version: opts.Version, Host: opts.Host, Dir: dir, PKI: NewPKI(t, dir)}
	start, address, metricsPort := Start, "127.0.0.1", FreePort(t)
	clientPort, peerPort, port := FreePort(t), FreePort(t), FreePort(t)
	if h := opts.Host; h != nil {
		start, address, metricsPort = h.Start, h.IP, 2381
		clientPort, peerPort, port = 2379, 2380, 6443
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	// kubeadm's etcd defaults (cmd/kubeadm/app/phases/etcd/local.go), on
	// loopback and without client TLS; then the rendered extraArgs.
	etcdArgs := Override(kubeadm.Args{
		{Name: "name", Value: "testbed"},
		{Name: "data-dir", Value: filepath.Join(dir, "etcd")},
		{Name: "listen-client-urls", Value: etcdURL},
		{Name: "advertise-client-urls", Value: etcdURL},
		{Name: "listen-peer-urls", Value: peerURL},
		{Name: "initial-advertise-peer-urls", Value: peerURL},
		{Name: "initial-cluster", Value: "testbed=" + peerURL},
		// kubeadm's is http://127.0.0.1:2381 (on a host; tests on the test's own loopback pass it in EtcdArgs).
		{Name: "listen-metrics-urls", Value: fmt.Sprintf("http://127.0.0.1:%d", metricsPort)},
		{Name: "snapshot-count", Value: "10000"},
		{Name: "watch-progress-notify-interval", Value: "5s"},
		{Name: "log-level", Value: "warn"},
	}, opts.EtcdArgs)
	cp.Etcd = start(t, "etcd", etcdBin, Args(etcdArgs))

	cp.URL = fmt.Sprintf("https://%s:%d", address, port)
	serving, servingKey := cp.PKI.Serving(t, "apiserver", []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(address), net.ParseIP("10.96.0.1")})
	apiArgs := Override(kubeadm.Args{
		{Name: "advertise-address", Value: address},
		{Name: "bind-address", Value: address},
		{Name: "secure-port", Value: fmt.Sprint(port)},
		{Name: "etcd-servers", Value: etcdURL},
		{Name: "client-ca-file", Value: cp.PKI.CACert},
		{Name: "tls-cert-file", Value: serving},
		{Name: "tls-private-key-file", Value: servingKey},
		{Name: "service-account-key-file", Value: cp.PKI.ServiceAccountPub},
		{Name: "service-account-signing-key-file", Value: cp.PKI.ServiceAccountKey},
		{Name: "service-account-issuer", Value: "https://kubernetes.default.svc.cluster.local"},
		{Name: "service-cluster-ip-range", Value: "10.96.0.0/12"},
		{Name: "authorization-mode", Value: "Node,RBAC"},
		{Name: "enable-admission-plugins", Value: "NodeRestriction"},
		{Name: "allow-privileged", Value: "true"},
		{Name: "enable-priority-and-fairness", Value: "false"},
		// On only for the fleet benchmark's profiles (EKSA_METRICS_PROFILE_DIR).
		{Name: "profiling", Value: strconv.FormatBool(os.Getenv("EKSA_METRICS_PROFILE_DIR") != "")},
		{Name: "v", Value: "1"},
	}, opts.APIServerArgs)
	if opts.Host == nil {
		// On the test's own loopback the kubernetes Service gets no
		// endpoints: from 1.37 the endpoint reconciler refuses a loopback
		// advertise address (k8s.io/kubernetes v1.37.2
		// pkg/controlplane/instance.go, ValidateIP), and no test scrapes
		// the API server through that Service without a simulated host.
		apiArgs = Override(apiArgs, kubeadm.Args{{Name: "endpoint-reconciler-type", Value: "none"}})
	}
	cp.APIServer = start(t, "kube-apiserver", apiBin, Args(apiArgs))

	adminCert, adminKey := cp.PKI.Client(t, "admin", "kubernetes-admin", "system:masters")
	cp.Admin = &rest.Config{Host: cp.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: cp.PKI.CACert, CertFile: adminCert, KeyFile: adminKey}, QPS: 200, Burst: 400}
	var err error
	if cp.Client, err = kubernetes.NewForConfig(cp.Admin); err != nil {
		t.Fatal(err)
	}
	if cp.Dynamic, err = dynamic.NewForConfig(cp.Admin); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "kube-apiserver /readyz", 90*time.Second, func() (bool, error) {
		body, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil && strings.TrimSpace(string(body)) == "ok", err
	}, cp.Etcd, cp.APIServer)
	// The default ServiceAccount controller is not running: create what tests need.
	return cp
}

// Kubeconfig writes a kubeconfig for a client certificate identity (user in
// CN, groups in O) and returns its path.
func (cp *ControlPlane) Kubeconfig(t testing.TB, name, user string, groups ...string) string {
	t.Helper()
	cert, key := cp.PKI.Client(t, name, user, groups...)
	return cp.writeKubeconfig(t, name, &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key})
}

// TokenKubeconfig writes a kubeconfig that authenticates with a bearer token.
func (cp *ControlPlane) TokenKubeconfig(t testing.TB, name, token string) string {
	t.Helper()
	return cp.writeKubeconfig(t, name, &clientcmdapi.AuthInfo{Token: token})
}

func (cp *ControlPlane) writeKubeconfig(t testing.TB, name string, auth *clientcmdapi.AuthInfo) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testbed"] = &clientcmdapi.Cluster{Server: cp.URL, CertificateAuthority: cp.PKI.CACert}
	cfg.AuthInfos[name] = auth
	cfg.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: name}
	cfg.CurrentContext = "testbed"
	path := filepath.Join(cp.Dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// ServiceAccount creates a ServiceAccount (and its namespace) if missing.
func (cp *ControlPlane) ServiceAccount(t testing.TB, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	_, _ = cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	_, err := cp.Client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("creating ServiceAccount %s/%s: %v", namespace, name, err)
	}
}

// Token issues a short-lived token for a ServiceAccount (TokenRequest API).
func (cp *ControlPlane) Token(t testing.TB, namespace, name string) string {
	t.Helper()
	cp.ServiceAccount(t, namespace, name)
	tr, err := cp.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

func ptrInt64(i int64) *int64 { return &i }

// Minor is the version of the running binaries as X.Y.
func (cp *ControlPlane) Minor() string {
	parts := strings.SplitN(strings.TrimPrefix(cp.Version, "v"), ".", 3)
	return parts[0] + "." + parts[1]
}

// StartGarbageCollector runs kube-controller-manager with its garbage
// collector alone, as a real cluster has it: objects whose owner is deleted
// (cert-manager's CertificateRequests of a deleted Certificate, for one)
// are deleted in the background.
func (cp *ControlPlane) StartGarbageCollector(t testing.TB) *Process {
	t.Helper()
	// The real collector runs as generic-garbage-collector, whose
	// ClusterRole allows every verb it uses on every resource.
	kubeconfig := cp.Kubeconfig(t, "garbage-collector", "system:serviceaccount:kube-system:generic-garbage-collector", "system:masters")
	return Start(t, "kube-controller-manager", Binary(t, filepath.Join("k8s", cp.Version, "kube-controller-manager")), []string{
		"--kubeconfig=" + kubeconfig, "--controllers=garbagecollector", "--leader-elect=false",
		"--secure-port=0", "--use-service-account-credentials=false",
	})
}
