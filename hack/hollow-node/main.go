// Command hollow-node runs a real kubelet server or a real kube-proxy metrics
// server with no container runtime, for tests. It is a thin wrapper over
// kubemark's exported API (k8s.io/kubernetes/pkg/kubemark and
// pkg/proxy/kubemark): kubemark's hollow kubelet runs the real kubelet code
// over a fake CRI runtime, a fake cAdvisor and a stub container manager. On
// top of kubemark's configuration we set what an EKS Anywhere node's kubelet
// runs with: webhook authentication and authorization against the API server,
// anonymous auth off, an x509 client CA, TLS serving on the node address, no
// read-only port.
//
//	hollow-node --morph=kubelet --kubeconfig=... --node-name=n1 --node-ip=198.51.100.11 \
//	  --client-ca-file=ca.crt [--tls-cert-file=... --tls-private-key-file=... | --server-tls-bootstrap] \
//	  [--node-labels=node-role.kubernetes.io/control-plane=] [--feature-gates=ComponentFlagz=true]
//	hollow-node --morph=proxy --kubeconfig=... --node-name=n1 [--config=config.conf | --metrics-bind-address=127.0.0.1:10249]
//
// It is built by hack/build-kubernetes.sh with the Kubernetes version of the
// test bed (a scratch module requiring k8s.io/kubernetes); it is not part of
// the eksa-metrics module.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/configz"
	_ "k8s.io/component-base/metrics/prometheus/restclient" // client metrics on /metrics, as in the real binaries
	_ "k8s.io/component-base/metrics/prometheus/version"    // kubernetes_build_info
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/klog/v2"
	proxyconfigv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubemark"
	proxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyconfigconversion "k8s.io/kubernetes/pkg/proxy/apis/config/v1alpha1"
	proxykubemark "k8s.io/kubernetes/pkg/proxy/kubemark"
	proxymetrics "k8s.io/kubernetes/pkg/proxy/metrics"
	"sigs.k8s.io/yaml"
)

type options struct {
	morph              string
	kubeconfig         string
	nodeName           string
	nodeIP             string
	port               int
	tlsCertFile        string
	tlsKeyFile         string
	clientCAFile       string
	nodeLabels         map[string]string
	featureGates       map[string]bool
	metricsBindAddress string
	proxyMode          string
	proxyConfig        string
	podManifestPath    string
	taints             []string
	authorizationMode  string
	serverTLSBootstrap bool
}

func main() {
	o := options{nodeLabels: map[string]string{}, featureGates: map[string]bool{}}
	fs := pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)
	fs.StringVar(&o.morph, "morph", "kubelet", "kubelet or proxy")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the node (kubelet) or of kube-proxy")
	fs.StringVar(&o.nodeName, "node-name", "hollow-node", "name of the Node object")
	fs.StringVar(&o.nodeIP, "node-ip", "", "node address: registered as InternalIP and the kubelet's bind address")
	fs.IntVar(&o.port, "port", 10250, "kubelet HTTPS port")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", "", "kubelet serving certificate (self-signed if empty)")
	fs.StringVar(&o.tlsKeyFile, "tls-private-key-file", "", "kubelet serving key")
	fs.BoolVar(&o.serverTLSBootstrap, "server-tls-bootstrap", false, "kubelet: serverTLSBootstrap: file a kubernetes.io/kubelet-serving CertificateSigningRequest and serve the certificate once it is approved and signed (no self-signed certificate)")
	fs.StringVar(&o.clientCAFile, "client-ca-file", "", "CA bundle for x509 client authentication")
	fs.Var(cliflag.NewMapStringString(&o.nodeLabels), "node-labels", "labels to register the node with (k=v,...)")
	fs.Var(cliflag.NewMapStringBool(&o.featureGates), "feature-gates", "feature gates (Name=true,...)")
	fs.StringVar(&o.metricsBindAddress, "metrics-bind-address", "127.0.0.1:10249", "kube-proxy metrics server address")
	fs.StringVar(&o.proxyMode, "proxy-mode", "iptables", "mode kube-proxy reports on /proxyMode and registers metrics for; no rules are written in any mode")
	fs.StringVar(&o.proxyConfig, "config", "", "kube-proxy: a KubeProxyConfiguration file (kubeadm's config.conf); its metricsBindAddress wins over --metrics-bind-address")
	fs.StringVar(&o.podManifestPath, "pod-manifest-path", "", "kubelet: static pod manifests (kubeadm's /etc/kubernetes/manifests); the kubelet creates their mirror pods")
	fs.StringSliceVar(&o.taints, "register-with-taints", nil, "kubelet: taints to register the node with (key=value:Effect or key:Effect)")
	fs.StringVar(&o.authorizationMode, "authorization-mode", "Webhook", "kubelet: Webhook (EKS-A's nodes) or AlwaysAllow (a misconfigured node, for tests that break it)")
	klogFlags := goflag.NewFlagSet("klog", goflag.ExitOnError)
	klog.InitFlags(klogFlags) // -v, --logtostderr, ...
	fs.AddGoFlagSet(klogFlags)
	_ = fs.Parse(os.Args[1:])

	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(o.featureGates); err != nil {
		klog.Fatalf("--feature-gates: %v", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	var err error
	switch o.morph {
	case "kubelet":
		err = runKubelet(ctx, o, flagzReader{fs})
	case "proxy":
		err = runProxy(ctx, o)
	default:
		err = fmt.Errorf("unknown --morph %q (kubelet or proxy)", o.morph)
	}
	if err != nil {
		klog.Fatal(err)
	}
}

func restConfig(path, userAgent string) (*rest.Config, error) {
	c, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	c.UserAgent = userAgent
	return c, nil
}

func runKubelet(ctx context.Context, o options, flagz flagzReader) error {
	if o.nodeIP == "" {
		return fmt.Errorf("--node-ip is required")
	}
	cfg, err := restConfig(o.kubeconfig, "hollow-kubelet")
	if err != nil {
		return err
	}
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}

	taints, err := parseTaints(o.taints)
	if err != nil {
		return err
	}
	f, c := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName:            o.nodeName,
		KubeletPort:         o.port,
		KubeletReadOnlyPort: 0,
		MaxPods:             110,
		NodeLabels:          o.nodeLabels,
		RegisterWithTaints:  taints,
	})
	if o.podManifestPath != "" {
		c.StaticPodPath = o.podManifestPath
		c.FileCheckFrequency.Duration = 2 * time.Second
	}
	// The EKS Anywhere node settings, over kubemark's defaults.
	f.NodeIP = o.nodeIP
	f.CertDirectory = filepath.Join(f.RootDirectory, "pki") // self-signed serving cert goes here
	c.Address = o.nodeIP
	c.Port = int32(o.port)
	c.ReadOnlyPort = 0
	c.TLSCertFile, c.TLSPrivateKeyFile = o.tlsCertFile, o.tlsKeyFile
	c.ServerTLSBootstrap = o.serverTLSBootstrap
	c.Authentication.Anonymous.Enabled = false
	c.Authentication.Webhook.Enabled = true
	c.Authentication.X509.ClientCAFile = o.clientCAFile
	c.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeWebhook
	if o.authorizationMode != string(kubeletconfig.KubeletAuthorizationModeWebhook) {
		if o.authorizationMode != string(kubeletconfig.KubeletAuthorizationModeAlwaysAllow) {
			return fmt.Errorf("--authorization-mode %q: want Webhook or AlwaysAllow", o.authorizationMode)
		}
		c.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeAlwaysAllow
	}
	c.FeatureGates = o.featureGates

	// Heartbeats get their own unthrottled client with a timeout, as in kubemark and the kubelet.
	hb := *cfg
	hb.QPS = -1
	hb.Timeout = min(c.NodeStatusUpdateFrequency.Duration, time.Duration(c.NodeLeaseDurationSeconds)*time.Second)
	heartbeatClient, err := clientset.NewForConfig(&hb)
	if err != nil {
		return err
	}

	// In-process fake CRI: no socket, no gRPC. Runtime and network report
	// ready. Every pod sandbox gets the node's address, as hostNetwork pods do:
	// a test runs a pod's processes on the node, where they are reachable at
	// the address the pod reports (and its EndpointSlices list).
	critesting.FakePodSandboxIPs = []string{o.nodeIP}
	runtime := critesting.NewFakeRuntimeService()
	runtime.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}

	hk := kubemark.NewHollowKubelet(f, c, client, heartbeatClient,
		newFakeCadvisor(o.nodeName),
		critesting.NewFakeImageService(), runtime,
		cm.NewStubContainerManager())

	// kubemark leaves TLSOptions and Auth nil (plain HTTP, no authn/authz);
	// build them the way the kubelet's own Run does.
	if hk.KubeletDeps.TLSOptions, err = kubeletapp.InitializeTLS(ctx, f, c); err != nil {
		return fmt.Errorf("TLS: %w", err)
	}
	auth, runCAReload, err := kubeletapp.BuildAuth(types.NodeName(o.nodeName), client, *c)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	runCAReload(ctx.Done())
	hk.KubeletDeps.Auth = auth
	hk.KubeletDeps.Flagz = flagz // /flagz (with ComponentFlagz)
	if err := setKubeletConfigz(c); err != nil {
		return err
	}

	go hk.Run(ctx) // never returns; exits the process on error
	<-ctx.Done()   // the kubelet does not stop on cancel: return, and main exits
	// kubemark made the root directory with os.MkdirTemp ($TMPDIR/hollow-kubelet.*) and never removes it.
	return os.RemoveAll(f.RootDirectory)
}

func runProxy(ctx context.Context, o options) error {
	cfg, err := restConfig(o.kubeconfig, "hollow-proxy")
	if err != nil {
		return err
	}
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	recorder := broadcaster.NewRecorder(legacyscheme.Scheme, "kube-proxy")
	hp := proxykubemark.NewHollowProxy(o.nodeName, client, client.CoreV1(), broadcaster, recorder)

	// kubemark's proxier is a no-op (no iptables/nftables/ipvs); only the
	// servers are real. MetricsBindAddress starts kube-proxy's metrics server
	// (/metrics, /healthz, /proxyMode, /configz, /statusz with ComponentStatusz).
	pc := hp.ProxyServer.Config
	pc.MetricsBindAddress = o.metricsBindAddress
	if o.proxyConfig != "" {
		raw, err := os.ReadFile(o.proxyConfig)
		if err != nil {
			return err
		}
		var file proxyconfigv1alpha1.KubeProxyConfiguration
		if err := yaml.UnmarshalStrict(raw, &file); err != nil {
			return fmt.Errorf("--config %s: %w", o.proxyConfig, err)
		}
		if file.MetricsBindAddress != "" {
			pc.MetricsBindAddress = file.MetricsBindAddress
		}
	}
	pc.BindAddressHardFail = true // return a listen error instead of retrying forever
	pc.Linux.OOMScoreAdj = nil    // leave this process's oom_score_adj alone
	pc.Mode = proxyconfig.ProxyMode(o.proxyMode)
	proxymetrics.RegisterMetrics(pc.Mode) // once; Run's own call is then a no-op
	go fakeSyncs(ctx)
	if err := setProxyConfigz(pc); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- hp.Run() }() // returns only on a listen error (BindAddressHardFail)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done(): // the proxy does not stop on cancel: return, and main exits
		return nil
	}
}

// fakeSyncs records a 5 ms IPv4 rule sync every 10 s in kube-proxy's core
// sync metrics, as a real proxier does; kubemark's no-op proxier records none,
// so kubeproxy_sync_proxy_rules_duration_seconds and
// kubeproxy_sync_proxy_rules_last_timestamp_seconds would have no series.
func fakeSyncs(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		proxymetrics.SyncProxyRulesLatency.WithLabelValues("IPv4").Observe(0.005)
		proxymetrics.SyncProxyRulesLastTimestamp.WithLabelValues("IPv4").SetToCurrentTime()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// flagzReader serves this binary's flags on the kubelet's /flagz; it satisfies
// flagz.Reader (k8s.io/component-base/zpages/flagz in 1.34,
// k8s.io/apiserver/pkg/server/flagz in 1.36) without importing either.
type flagzReader struct{ fs *pflag.FlagSet }

func (r flagzReader) GetFlagz() map[string]string {
	m := map[string]string{}
	r.fs.VisitAll(func(f *pflag.Flag) { m[f.Name] = f.Value.String() })
	return m
}

// setKubeletConfigz publishes the configuration on /configz as the kubelet's
// Run does (kubemark's path skips it): converted to kubelet.config.k8s.io/v1beta1.
func setKubeletConfigz(c *kubeletconfig.KubeletConfiguration) error {
	scheme, _, err := kubeletscheme.NewSchemeAndCodecs()
	if err != nil {
		return err
	}
	v := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := scheme.Convert(c, v, nil); err != nil {
		return err
	}
	v.SetGroupVersionKind(kubeletconfigv1beta1.SchemeGroupVersion.WithKind("KubeletConfiguration"))
	cz, err := configz.New("kubeletconfig")
	if err != nil {
		return err
	}
	cz.Set(v) // returns an error from 1.36 on (v is external and has a kind), nothing in 1.34
	return nil
}

// setProxyConfigz publishes kube-proxy's configuration on /configz, as
// kube-proxy's newProxyServer does (NewHollowProxy skips it).
func setProxyConfigz(c *proxyconfig.KubeProxyConfiguration) error {
	v := &proxyconfigv1alpha1.KubeProxyConfiguration{}
	if err := proxyconfigconversion.Convert_config_KubeProxyConfiguration_To_v1alpha1_KubeProxyConfiguration(c, v, nil); err != nil {
		return err
	}
	v.SetGroupVersionKind(proxyconfigv1alpha1.SchemeGroupVersion.WithKind("KubeProxyConfiguration"))
	cz, err := configz.New(proxyconfig.GroupName)
	if err != nil {
		return err
	}
	cz.Set(v) // see setKubeletConfigz
	return nil
}

// parseTaints reads key=value:Effect and key:Effect.
func parseTaints(specs []string) ([]v1.Taint, error) {
	var out []v1.Taint
	for _, s := range specs {
		kv, effect, ok := strings.Cut(s, ":")
		if !ok {
			return nil, fmt.Errorf("--register-with-taints %q: want key=value:Effect", s)
		}
		k, val, _ := strings.Cut(kv, "=")
		out = append(out, v1.Taint{Key: k, Value: val, Effect: v1.TaintEffect(effect)})
	}
	return out, nil
}
