// Package cluster talks to live clusters: server-side apply with the field
// manager eksa-metrics, reading live state to plan, the read-modify-write
// edits server-side apply cannot express, and waiting for rollouts.
package cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	typedauthorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	typeddiscoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	typedrbacv1 "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// FieldManager is the server-side apply field manager of everything
// eksa-metrics writes.
const FieldManager = "eksa-metrics"

// Cluster is one cluster reached through a kubeconfig.
type Cluster struct {
	// Role is "management" or "workload", for messages.
	Role       string
	Kubeconfig string
	Context    string
	Server     string

	Dynamic dynamic.Interface
	Core    Clients
	mapper  *mapper
	// config is what the clients were made from (WatchInventory makes its
	// metadata client from it); base is what it was given (RESTConfig).
	config, base *rest.Config
	// inventory, when set (CacheInventory), serves the inventory lists.
	inventory map[schema.GroupVersionResource]*cachedKind
	// held, by cluster name, is what WatchInventory's watches know of
	// each Cluster's inventory here: what its plans read (held.go).
	heldMu sync.Mutex
	held   map[string]*held
	// CA is the cluster CA from the kubeconfig, when it names one.
	CA *x509.CertPool
	// Namespaced, when set, says where this identity may list the
	// resources it may not list cluster-wide ("group/resource", core
	// resources as "/secrets", to namespaces): the controller on its
	// management cluster holds Roles, not cluster-wide rights, for Secrets
	// and DaemonSets, and lists them where it may create them.
	Namespaced map[string][]string
	// Named, when set, says, for a resource and a namespace of Namespaced,
	// the names this identity may list there and nothing else: it lists
	// and watches each by name (fieldSelector metadata.name). The
	// controller reads Secrets of its management cluster so.
	Named map[string]map[string][]string
}

// scope is one list of a resource this identity may make: a namespace (""
// for every namespace) and, where it may read only named objects, the one
// name (a field selector).
type scope struct{ namespace, name string }

// scopes are the lists that read gvr wherever this identity may: the whole
// cluster, each namespace of Namespaced, each name of Named.
func (c *Cluster) scopes(gvr schema.GroupVersionResource) []scope {
	key := gvr.Group + "/" + gvr.Resource
	namespaces, scoped := c.Namespaced[key]
	if !scoped {
		return []scope{{namespace: metav1.NamespaceAll}}
	}
	var out []scope
	for _, ns := range namespaces {
		names, named := c.Named[key][ns]
		if !named {
			out = append(out, scope{namespace: ns})
		}
		for _, n := range names {
			out = append(out, scope{namespace: ns, name: n})
		}
	}
	return out
}

// options are opts for this scope's list or watch.
func (s scope) options(opts metav1.ListOptions) metav1.ListOptions {
	if s.name != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.name).String()
	}
	return opts
}

// Clients are the typed clients eksa-metrics uses, of the API groups it
// reads and edits through them. A kubernetes.Interface (a fake clientset's
// too) is one; a connection builds these alone, not the ~50 REST clients
// of a whole clientset: the controller holds one per workload cluster.
type Clients interface {
	CoreV1() typedcorev1.CoreV1Interface
	AppsV1() typedappsv1.AppsV1Interface
	AuthorizationV1() typedauthorizationv1.AuthorizationV1Interface
	RbacV1() typedrbacv1.RbacV1Interface
	DiscoveryV1() typeddiscoveryv1.DiscoveryV1Interface
	Discovery() discovery.DiscoveryInterface
}

// typedClients are the Clients of one connection, over one HTTP client.
type typedClients struct {
	core          *typedcorev1.CoreV1Client
	apps          *typedappsv1.AppsV1Client
	authorization *typedauthorizationv1.AuthorizationV1Client
	rbac          *typedrbacv1.RbacV1Client
	discoveryV1   *typeddiscoveryv1.DiscoveryV1Client
	discovery     *discovery.DiscoveryClient
}

func (t *typedClients) CoreV1() typedcorev1.CoreV1Interface { return t.core }
func (t *typedClients) AppsV1() typedappsv1.AppsV1Interface { return t.apps }
func (t *typedClients) AuthorizationV1() typedauthorizationv1.AuthorizationV1Interface {
	return t.authorization
}
func (t *typedClients) RbacV1() typedrbacv1.RbacV1Interface                { return t.rbac }
func (t *typedClients) DiscoveryV1() typeddiscoveryv1.DiscoveryV1Interface { return t.discoveryV1 }
func (t *typedClients) Discovery() discovery.DiscoveryInterface            { return t.discovery }

func newTypedClients(cfg *rest.Config, hc *http.Client) (*typedClients, error) {
	var t typedClients
	var err error
	if t.core, err = typedcorev1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if t.apps, err = typedappsv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if t.authorization, err = typedauthorizationv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if t.rbac, err = typedrbacv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if t.discoveryV1, err = typeddiscoveryv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if t.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	return &t, nil
}

// listAll lists a resource in every namespace: cluster-wide, or where
// Namespaced says it may be listed (and so created) by this identity.
func (c *Cluster) listAll(ctx context.Context, ri dynamic.NamespaceableResourceInterface, gvr schema.GroupVersionResource, opts metav1.ListOptions) ([]unstructured.Unstructured, error) {
	if items, cached, err := c.cachedList(gvr, opts); cached {
		return items, err
	}
	var out []unstructured.Unstructured
	for _, s := range c.scopes(gvr) {
		l, err := ri.Namespace(s.namespace).List(ctx, s.options(opts))
		switch {
		case err != nil && s.namespace == "":
			return nil, err
		case err != nil:
			return nil, fmt.Errorf("in namespace %s: %w", s.namespace, err)
		}
		out = append(out, l.Items...)
	}
	return out, nil
}

// ConnectOptions say how to reach a cluster.
type ConnectOptions struct {
	// Kubeconfig is a file path; KubeconfigData, when set, is used instead
	// (the workload kubeconfig read from the management cluster), and
	// Kubeconfig then only names its source in messages.
	Kubeconfig     string
	KubeconfigData []byte
	// Secret names the Secret KubeconfigData was read from
	// (namespace/name), for the remediation of an error.
	Secret string
	// TrustKubeconfigData accepts in KubeconfigData what a kubeconfig read
	// from a Secret is refused by default (CheckSecretKubeconfig): exec and
	// auth-provider plugins, tokenFile and local file paths.
	TrustKubeconfigData bool
	Context             string
	// WrapTransport wraps every request (tests count and break requests).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Timeout bounds each request.
	Timeout time.Duration
}

// UnreachableError says which kubeconfig and context could not be used.
type UnreachableError struct {
	Role, Kubeconfig, Context, Server string
	// From says where Kubeconfig came from (the --kubeconfig flag,
	// $KUBECONFIG, the default ~/.kube/config); empty when Kubeconfig says it
	// (a Secret).
	From string
	// Secret is the Secret the kubeconfig was read from (namespace/name).
	Secret string
	Err    error
}

func (e *UnreachableError) Error() string {
	ctx := e.Context
	if ctx == "" {
		ctx = "its current context"
	} else {
		ctx = fmt.Sprintf("context %q", ctx)
	}
	server := ""
	if e.Server != "" {
		server = " (server " + e.Server + ")"
	}
	try := "kubectl --kubeconfig " + e.Kubeconfig + " cluster-info"
	if strings.ContainsAny(e.Kubeconfig, " $~"+string(filepath.ListSeparator)) || e.From == fromEnv {
		try = "kubectl cluster-info"
	}
	if e.Context != "" {
		try = strings.TrimSuffix(try, " cluster-info") + " --context " + e.Context + " cluster-info"
	}
	if e.Secret != "" {
		ns, name, _ := strings.Cut(e.Secret, "/")
		return fmt.Sprintf("cannot reach the %s cluster of the kubeconfig in %s%s: %v; check that its API server is up and reachable from the management cluster (kubectl --kubeconfig <(kubectl -n %s get secret %s -o jsonpath='{.data.value}' | base64 -d) get --raw /readyz)",
			e.Role, e.Kubeconfig, server, e.Err, ns, name)
	}
	return fmt.Sprintf("cannot reach the %s cluster of kubeconfig %q%s, %s%s: %v; check that the file and context are right and that the API server is reachable from here (%s)",
		e.Role, e.Kubeconfig, from(e.From), ctx, server, e.Err, try)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// KubeconfigInvalidError is a kubeconfig that is missing, cannot be read or
// parsed, or does not name a usable context and server: invalid input, not
// an unreachable cluster. No request was sent.
type KubeconfigInvalidError struct {
	Role string
	// Kubeconfig is the file (the files of $KUBECONFIG, or the Secret) and
	// From where it came from, as UnreachableError's.
	Kubeconfig, From, Context string
	// Secret is the Secret the kubeconfig was read from (namespace/name).
	Secret string
	Err    error
}

func (e *KubeconfigInvalidError) Error() string {
	ctx := ""
	if e.Context != "" {
		ctx = fmt.Sprintf(" (context %q)", e.Context)
	}
	if e.Secret != "" {
		ns, name, _ := strings.Cut(e.Secret, "/")
		return fmt.Sprintf("the kubeconfig of the %s cluster in %s cannot be used: %v; EKS Anywhere writes it (key value) when it creates the cluster: check what changed it (kubectl -n %s get secret %s --show-managed-fields -o yaml)",
			e.Role, e.Kubeconfig, e.Err, ns, name)
	}
	return fmt.Sprintf("the kubeconfig of the %s cluster, %q%s%s, cannot be used: %v; fix it, or name another file with %s", e.Role, e.Kubeconfig, from(e.From), ctx, e.Err, kubeconfigFlag(e.Role))
}

func (e *KubeconfigInvalidError) Unwrap() error { return e.Err }

// Where a kubeconfig came from, for messages.
const (
	fromEnv     = "from $KUBECONFIG"
	fromDefault = "the default, as neither --kubeconfig nor $KUBECONFIG is set"
)

func from(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// kubeconfigFlag is the flag that names the kubeconfig of a role.
func kubeconfigFlag(role string) string {
	if role == "workload" {
		return "--workload-kubeconfig"
	}
	return "--kubeconfig"
}

// Connect builds clients for a cluster and checks that it answers.
func Connect(ctx context.Context, role string, opts ConnectOptions) (*Cluster, error) {
	c := &Cluster{Role: role, Kubeconfig: opts.Kubeconfig, Context: opts.Context}
	fromWhere := ""
	fail := func(err error) (*Cluster, error) {
		return nil, &UnreachableError{Role: role, Kubeconfig: c.Kubeconfig, From: fromWhere, Context: opts.Context, Server: c.Server, Secret: opts.Secret, Err: err}
	}
	invalid := func(err error) (*Cluster, error) {
		return nil, &KubeconfigInvalidError{Role: role, Kubeconfig: c.Kubeconfig, From: fromWhere, Context: opts.Context, Secret: opts.Secret, Err: err}
	}
	var loader clientcmd.ClientConfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: opts.Context}
	if opts.KubeconfigData != nil {
		raw, err := clientcmd.Load(opts.KubeconfigData)
		if err != nil {
			return invalid(fmt.Errorf("parsing the kubeconfig: %w", err))
		}
		if !opts.TrustKubeconfigData {
			// Before anything runs, reads a file or sends a request.
			if err := CheckSecretKubeconfig(raw, c.Kubeconfig); err != nil {
				return nil, err
			}
		}
		loader = clientcmd.NewDefaultClientConfig(*raw, overrides)
	} else {
		// kubectl's rules: the explicit file, else $KUBECONFIG, else ~/.kube/config.
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = opts.Kubeconfig
		switch env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); {
		case opts.Kubeconfig != "":
			fromWhere = "from " + kubeconfigFlag(role)
		case env != "":
			c.Kubeconfig, fromWhere = env, fromEnv
		default:
			c.Kubeconfig, fromWhere = clientcmd.RecommendedHomeFile, fromDefault
		}
		// Read the files first: a missing, unreadable or malformed one is
		// invalid input naming it, not an unreachable cluster.
		raw, err := rules.Load()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = errors.New("no such file")
			}
			return invalid(err)
		}
		if opts.Context != "" && len(raw.Contexts) > 0 && raw.Contexts[opts.Context] == nil {
			return invalid(fmt.Errorf("it has no context %q (--context)", opts.Context))
		}
		loader = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	}
	cfg, err := loader.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		if opts.KubeconfigData == nil && opts.Kubeconfig == "" {
			// $KUBECONFIG's missing files are skipped, as kubectl does.
			return invalid(errors.New("no such file, or nothing in it"))
		}
		return invalid(err)
	}
	if clientcmd.IsConfigurationInvalid(err) {
		return invalid(err)
	}
	if err != nil {
		return fail(err)
	}
	c.Server = cfg.Host
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = opts.Timeout
	if opts.WrapTransport != nil {
		cfg.Wrap(opts.WrapTransport)
	}
	out, err := FromRESTConfig(ctx, role, c.Kubeconfig, cfg)
	if err != nil {
		return fail(err)
	}
	out.Context = opts.Context
	return out, nil
}

// FromRESTConfig builds clients for a cluster from a rest.Config (a
// controller's, or one read from a workload kubeconfig Secret) and checks
// that it answers. source names the configuration in messages.
func FromRESTConfig(ctx context.Context, role, source string, cfg *rest.Config) (*Cluster, error) {
	c := &Cluster{Role: role, Kubeconfig: source, Server: cfg.Host}
	if pem := cfg.CAData; len(pem) > 0 {
		c.CA = x509.NewCertPool()
		c.CA.AppendCertsFromPEM(pem)
	} else if cfg.CAFile != "" {
		if pem, err := os.ReadFile(cfg.CAFile); err == nil {
			c.CA = x509.NewCertPool()
			c.CA.AppendCertsFromPEM(pem)
		}
	}
	cfg = rest.CopyConfig(cfg)
	c.base = rest.CopyConfig(cfg)
	cfg.Wrap(RefuseRedirects)
	cfg.Wrap(LimitReplies)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	c.config = cfg
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	clients, err := newTypedClients(cfg, hc)
	if err != nil {
		return nil, err
	}
	c.Core = clients
	if c.Dynamic, err = dynamic.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if _, err := clients.discovery.ServerVersion(); err != nil {
		return nil, err
	}
	c.mapper = newMapper(clients.discovery)
	return c, nil
}

// RESTConfig is a copy of the configuration the cluster was reached with,
// redirects refused (a controller manager's: its lists of a whole fleet are
// not held to MaxReply, and its watches have no deadline).
func (c *Cluster) RESTConfig() *rest.Config {
	cfg := rest.CopyConfig(c.base)
	cfg.Wrap(RefuseRedirects)
	return cfg
}

// Serves says whether the cluster serves a kind in that version.
func (c *Cluster) Serves(gvk schema.GroupVersionKind) (bool, error) {
	_, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}

// String names the cluster in messages.
func (c *Cluster) String() string { return c.Role + " cluster" }

// WorkloadKubeconfig reads the kubeconfig EKS-A stores for a workload
// cluster on its management cluster: Secret eksa-system/<cluster>-kubeconfig,
// key "value".
func (c *Cluster) WorkloadKubeconfig(ctx context.Context, clusterName string) ([]byte, error) {
	name := spec.KubeconfigSecret(clusterName)
	s, err := c.Core.CoreV1().Secrets(spec.MachinesNamespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("the management cluster has no Secret eksa-system/%s with the workload cluster's kubeconfig; is %q managed by this management cluster? Pass --workload-kubeconfig to give it directly", name, clusterName)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret eksa-system/%s from the management cluster: %w", name, err)
	}
	data, ok := s.Data["value"]
	if !ok || len(data) == 0 {
		return nil, fmt.Errorf("Secret eksa-system/%s has no key \"value\"; pass --workload-kubeconfig", name)
	}
	return data, nil
}

// errNamespaceDryRun means a namespace is missing and a server dry run cannot
// create it, so the objects in it cannot be validated.
var errNamespaceDryRun = errors.New("namespace does not exist yet")

// ensureNamespace creates a namespace when it is missing (a read first, so a
// converged cluster sees no write).
func (c *Cluster) ensureNamespace(ctx context.Context, ns string, dryRun bool) error {
	_, err := c.Core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	if dryRun {
		return errNamespaceDryRun
	}
	opts := metav1.CreateOptions{FieldManager: FieldManager}
	_, err = c.Core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, opts)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
