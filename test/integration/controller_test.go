package integration

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/config"
	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

var (
	metricsConfigGVR = schema.GroupVersionResource{Group: "metrics.anywhere.eks.amazonaws.com", Version: "v1alpha1", Resource: "metricsconfigs"}
	eksaClusterGVR   = schema.GroupVersionResource{Group: "anywhere.eks.amazonaws.com", Version: "v1alpha1", Resource: "clusters"}
)

// fleet is a management API server with EKS Anywhere's CRDs and two workload
// API servers, each with its kubeconfig Secret and its EKS-A Cluster and
// KubeadmControlPlane in the management cluster.
type fleet struct {
	mgmt      *framework.ControlPlane
	workloads map[string]*framework.ControlPlane
	// kubeconfig of the controller's ServiceAccount, bound by the RBAC of
	// `eksa-metrics controller manifests`.
	controllerKubeconfig string
	// granted are the workload Clusters whose kubeconfig Secret the
	// controller may read (controller manifests --workload-cluster).
	granted []string
}

// grant lets the controller read the kubeconfig Secret of Cluster name, as
// a platform team does: the manifests printed again with one more
// --workload-cluster, their kubeconfig Role applied.
func (f *fleet) grant(t testing.TB, name string) {
	t.Helper()
	f.granted = append(f.granted, name)
	raw, err := config.BuildWith(config.Options{Image: config.ImageRepository + ":v0.1.0", Namespace: config.DefaultNamespace, WorkloadClusters: f.granted})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if md, _ := obj["metadata"].(map[string]any); obj["kind"] == "Role" && md["name"] == config.KubeconfigRole {
			if err := f.mgmt.Apply(context.Background(), "installer", true, obj); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("the manifests hold no Role " + config.KubeconfigRole)
}

func newFleet(t testing.TB, names ...string) *fleet {
	t.Helper()
	ctx := context.Background()
	f := &fleet{mgmt: framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion}), workloads: map[string]*framework.ControlPlane{}}
	f.mgmt.InstallCRDs(t, "v1beta2")
	f.mgmt.InstallCRDDir(t, "eks-anywhere")
	// The Cluster API Cluster, whose EKS-A labels say which EKS-A Cluster
	// the eksa-system objects of a name belong to.
	f.mgmt.InstallCRDDir(t, "cluster-api-core")
	// cert-manager's, which every EKS-A management cluster has: the
	// manifests issue the controller's metrics certificate with it.
	f.mgmt.InstallCRDDir(t, "cert-manager")
	// The CRD, namespace and RBAC exactly as the manifests command prints
	// them (the Deployment does not run here: the controller runs in the test).
	raw, err := config.Build(config.ImageRepository+":v0.1.0", config.DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	var install []map[string]any
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if k := obj["kind"]; k != "Deployment" && k != "Service" {
			install = append(install, obj)
		}
	}
	if err := f.mgmt.Apply(ctx, "installer", true, install...); err != nil {
		t.Fatal(err)
	}
	for _, gvr := range []schema.GroupVersionResource{metricsConfigGVR, bindingGVR} {
		framework.WaitFor(t, "the API "+gvr.Resource, 30*time.Second, func() (bool, error) {
			_, err := f.mgmt.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
			return err == nil, err
		})
	}
	f.controllerKubeconfig = f.mgmt.TokenKubeconfig(t, "controller", f.mgmt.Token(t, config.DefaultNamespace, "eksa-metrics-controller"))

	f.mgmt.ServiceAccount(t, "eksa-system", "default")
	// The namespace where the management cluster's scrape configuration
	// goes exists (the controller creates no namespace).
	f.mgmt.ServiceAccount(t, "monitoring", "default")
	for _, name := range names {
		if name == "mgmt" { // the management cluster's own Cluster
			f.workloads[name] = f.mgmt
			f.eksaCluster(t, "default", name, "mgmt", nil)
			continue
		}
		w := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
		w.InstallCRDs(t, "v1beta2")
		f.workloads[name] = w
		f.eksaCluster(t, "default", name, "mgmt", flatKubeconfig(t, w.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")))
	}
	return f
}

// eksaCluster writes what EKS Anywhere keeps for a Cluster namespace/name on
// the management cluster: the EKS-A Cluster (labelled metrics=on, managed by
// managedBy) with the docker fixture's other objects, and in eksa-system its
// Cluster API Cluster (labelled for it, as EKS-A does), its
// KubeadmControlPlane and, when kubeconfig is given, its kubeconfig Secret.
func (f *fleet) eksaCluster(t testing.TB, namespace, name, managedBy string, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	f.mgmt.ServiceAccount(t, namespace, "default") // the namespace
	if kubeconfig != nil {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: "eksa-system"}, Data: map[string][]byte{"value": kubeconfig}}
		if _, err := f.mgmt.Client.CoreV1().Secrets("eksa-system").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.grant(t, name)
	}
	for _, doc := range framework.ReadYAML(t, filepath.Join(testutil.SharedFixtures(t), "specs", "docker.yaml")) {
		obj := sanitize(doc).(map[string]any)
		md := obj["metadata"].(map[string]any)
		md["name"], md["namespace"] = name, namespace
		if obj["kind"] == "Cluster" {
			md["labels"] = map[string]any{"metrics": "on"}
			obj["spec"].(map[string]any)["managementCluster"] = map[string]any{"name": managedBy}
			obj["spec"].(map[string]any)["datacenterRef"].(map[string]any)["name"] = name
			obj["spec"].(map[string]any)["eksaVersion"] = "v0.26.1"
			// Not in the v0.26.1 CRD (a newer EKS-A's field in the fixture).
			delete(obj["spec"].(map[string]any)["controlPlaneConfiguration"].(map[string]any), "certSANs")
		}
		if err := f.mgmt.Apply(ctx, "eks-a-cli", true, obj); err != nil {
			t.Fatalf("%s %s/%s: %v", obj["kind"], namespace, name, err)
		}
	}
	if namespace != "default" {
		return // eksa-system holds one set of objects per name: the real one's
	}
	f.eksaSystemObjects(t, namespace, name)
}

// eksaSystemObjects writes the KubeadmControlPlane and the Cluster API
// Cluster (labelled for the EKS-A Cluster namespace/name) of a Cluster.
func (f *fleet) eksaSystemObjects(t testing.TB, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	kcp := eksaKCP(t, "docker.v1beta2", "v1beta2")
	kcp["metadata"].(map[string]any)["name"] = name
	capi := map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": name, "namespace": "eksa-system", "labels": map[string]any{
			"cluster.anywhere.eks.amazonaws.com/cluster-name": name, "cluster.anywhere.eks.amazonaws.com/cluster-namespace": namespace}},
		"spec": map[string]any{"clusterNetwork": map[string]any{"pods": map[string]any{"cidrBlocks": []any{"192.168.0.0/16"}}}}}
	if err := f.mgmt.Apply(ctx, "eks-a-controller", true, kcp, capi); err != nil {
		t.Fatal(err)
	}
}

// flatKubeconfig inlines the certificate files, as the Secret EKS-A keeps does.
func flatKubeconfig(t testing.TB, path string) []byte {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		t.Fatal(err)
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// counter counts the controller's requests to the management API server.
type counter struct {
	mu   sync.Mutex
	reqs map[string]int
}

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		key := req.Method + " " + req.URL.Path
		if req.URL.Query().Get("watch") == "true" {
			key = "WATCH " + req.URL.Path
		}
		c.mu.Lock()
		c.reqs[key]++
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (c *counter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.reqs
	c.reqs = map[string]int{}
	return out
}

// startController runs `eksa-metrics controller run` in the test process
// until stop is called.
func (f *fleet) startController(t testing.TB, cnt *counter) (stop func()) {
	t.Helper()
	return f.startControllerWith(t, cnt, nil)
}

// startControllerWith is startController with options changed by more.
func (f *fleet) startControllerWith(t testing.TB, cnt *counter, more func(*cli.ControllerOptions)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errOut := &framework.LockedBuffer{}
	done := make(chan error, 1)
	o := &cli.ControllerOptions{Kubeconfig: f.controllerKubeconfig, MetricsAddress: fmt.Sprintf("127.0.0.1:%d", framework.FreePort(t)), ProbeAddress: "0",
		LeaderElect: true, LeaderNamespace: config.DefaultNamespace, Concurrency: 4, Workers: 2, WrapTransport: cnt.wrap,
		ManagementCluster: "default/mgmt", MonitoringNamespaces: []string{"monitoring"}}
	if more != nil {
		more(o)
	}
	go func() { done <- o.Run(ctx, &cli.Factory{IOStreams: cli.IOStreams{Out: errOut, ErrOut: errOut}}) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", errOut.String())
		}
	})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("the controller stopped with %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("the controller did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (f *fleet) metricsConfig(t testing.TB, kubeProxy bool) {
	t.Helper()
	f.metricsConfigSpec(t, map[string]any{"components": map[string]any{"kubeProxy": map[string]any{"enabled": kubeProxy}}})
}

// metricsConfigSpec applies the MetricsConfig "fleet" (Clusters labelled
// metrics=on, the Group metrics-readers) with more spec fields.
func (f *fleet) metricsConfigSpec(t testing.TB, more map[string]any) {
	t.Helper()
	spec := map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"metrics": "on"}},
		"scrapers": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}}}
	for k, v := range more {
		spec[k] = v
	}
	mc := map[string]any{"apiVersion": "metrics.anywhere.eks.amazonaws.com/v1alpha1", "kind": "MetricsConfig",
		"metadata": map[string]any{"name": "fleet", "namespace": "default"}, "spec": spec}
	if err := f.mgmt.Apply(context.Background(), "platform-team", true, mc); err != nil {
		t.Fatal(err)
	}
}

// objects lists what eksa-metrics made in a workload cluster.
func objects(t testing.TB, w *framework.ControlPlane) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix}
	var out []string
	ds, err := w.Client.AppsV1().DaemonSets("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		out = append(out, "DaemonSet/"+d.Name)
	}
	crs, err := w.Client.RbacV1().ClusterRoles().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crs.Items {
		out = append(out, "ClusterRole/"+c.Name)
	}
	secrets, err := w.Client.CoreV1().Secrets("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		out = append(out, "Secret/"+s.Name)
	}
	sort.Strings(out)
	return out
}

func has(objs []string, want string) bool {
	for _, o := range objs {
		if o == want {
			return true
		}
	}
	return false
}

func (f *fleet) waitFor(t testing.TB, what string, cond func() error) {
	t.Helper()
	framework.WaitFor(t, what, 90*time.Second, func() (bool, error) {
		err := cond()
		return err == nil, err
	})
}

func (f *fleet) label(t testing.TB, name string, labels, annotations map[string]any) {
	t.Helper()
	patch, _ := yaml.YAMLToJSON([]byte(fmt.Sprintf("metadata: {labels: %s, annotations: %s}", toJSON(labels), toJSON(annotations))))
	if _, err := f.mgmt.Dynamic.Resource(eksaClusterGVR).Namespace("default").Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func toJSON(m map[string]any) string {
	if m == nil {
		return "{}"
	}
	b, _ := yaml.Marshal(m)
	j, _ := yaml.YAMLToJSON(b)
	return string(j)
}

func (f *fleet) status(t testing.TB) map[string]any { t.Helper(); return f.statusOf(t, "fleet") }

var bindingGVR = schema.GroupVersionResource{Group: "metrics.anywhere.eks.amazonaws.com", Version: "v1alpha1", Resource: "metricsconfigbindings"}

// clusterStates are the states of the Clusters of MetricsConfig
// namespace/name: its MetricsConfigBindings' status, each with the
// Cluster's name as "name".
func (f *fleet) clusterStates(t testing.TB, namespace, name string) []any {
	t.Helper()
	list, err := f.mgmt.Dynamic.Resource(bindingGVR).Namespace(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "metrics.anywhere.eks.amazonaws.com/metricsconfig=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, b := range list.Items {
		st, _, _ := unstructured.NestedMap(b.Object, "status")
		if st == nil {
			st = map[string]any{}
		}
		st["name"], _, _ = unstructured.NestedString(b.Object, "spec", "clusterName")
		if b.GetName() != fmt.Sprintf("%s.%s", st["name"], name) {
			t.Errorf("MetricsConfigBinding %s/%s is not named <cluster>.<metricsconfig>", namespace, b.GetName())
		}
		out = append(out, st)
	}
	return out
}

// statusOf is the status of MetricsConfig default/name.
func (f *fleet) statusOf(t testing.TB, name string) map[string]any {
	t.Helper()
	mc, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, _, _ := unstructured.NestedMap(mc.Object, "status")
	return st
}

// The controller, with exactly the RBAC its manifests grant, keeps a fleet
// of two workload clusters as one MetricsConfig says: objects appear in both,
// a Cluster leaving the selector is cleaned up and one joining is picked up,
// a paused Cluster is left alone, a controller stopped and restarted
// converges, and a deleted MetricsConfig leaves nothing behind. At rest it
// sends nothing but leader election and watches.
func TestControllerReconcilesAFleet(t *testing.T) {
	f := newFleet(t, "w1", "w2", "mgmt")
	// The curated-packages controller as EKS-A ships it (v0.26): the
	// controller adds its kube-rbac-proxy sidecar.
	installed := f.mgmt.InstallUpstream(t, "eks-anywhere-packages-v0.4.17.yaml", "cert-manager-v1.20.2.yaml")
	shipped := installed["eksa-packages/eks-anywhere-packages"]
	cnt := &counter{reqs: map[string]int{}}
	stop := f.startController(t, cnt)
	f.metricsConfig(t, true)
	start := time.Now()
	for _, name := range []string{"w1", "w2"} {
		f.waitFor(t, "objects in "+name, func() error {
			objs := objects(t, f.workloads[name])
			if !has(objs, "DaemonSet/"+templates.NodeDS) || !has(objs, "ClusterRole/"+templates.ReaderRole) || !has(objs, "Secret/eksa-metrics-serving-ca") {
				return fmt.Errorf("%v", objs)
			}
			return nil
		})
	}
	f.waitFor(t, "status: 3 of 3 ready", func() error {
		st := f.status(t)
		if st["readyClusters"] != int64(3) || st["selectedClusters"] != int64(3) {
			return fmt.Errorf("%v", st)
		}
		return nil
	})
	t.Logf("three clusters (two workload, the management cluster itself) applied %s after the MetricsConfig was created", time.Since(start).Round(100*time.Millisecond))
	for _, name := range []string{"mgmt", "w1", "w2"} {
		if ok, msg := f.verified(t, name); !ok {
			t.Errorf("%s: Verified is not True after apply: %s", name, msg)
		}
	}
	f.waitFor(t, "the packages controller's sidecar", func() error { return sidecar(t, f.mgmt, true) })

	// At rest: nothing but leader election and watches. It is at rest once
	// the reconciles its own writes caused are done: 3 s without a request
	// but those (a minute at most).
	atRest(t, cnt)
	cnt.reset()
	time.Sleep(20 * time.Second)
	idle := cnt.reset()
	// Event series updates flush changes made before the window.
	if n, other := busy(idle); n > 0 {
		t.Errorf("at rest the controller sent %v", other)
	}
	t.Logf("at rest for 20 s: %v", idle)

	// eksctl anywhere upgrade management-components puts the shipped
	// Deployment back: the controller, watching it, restores its edit.
	d, err := f.mgmt.Client.AppsV1().Deployments("eksa-packages").Get(context.Background(), "eks-anywhere-packages", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var packages appsv1.Deployment
	if err := convertMap(shipped, &packages); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template = packages.Spec.Template
	took := f.restored(t, "the sidecar", func() {
		if _, err := f.mgmt.Client.AppsV1().Deployments("eksa-packages").Update(context.Background(), d, metav1.UpdateOptions{FieldManager: "eks-a-cli"}); err != nil {
			t.Fatal(err)
		}
	}, func(want bool) error { return sidecar(t, f.mgmt, want) })
	t.Logf("a Deployment overwritten by the shipped manifest was restored in %s", took)

	// EKS-A force-applies the shipped cert-manager Deployment (server-side,
	// field manager eks-a-controller): the container's args are an atomic
	// list, so the apply takes them back, and with them the loopback listen
	// address our sidecar fronts. The controller takes them back in turn.
	f.waitFor(t, "cert-manager listening on loopback", func() error { return certManagerListen(t, f.mgmt, true) })
	took = f.restored(t, "cert-manager's loopback address", func() {
		if err := f.mgmt.Apply(context.Background(), "eks-a-controller", true, installed["cert-manager/cert-manager"]); err != nil {
			t.Fatal(err)
		}
	}, func(want bool) error { return certManagerListen(t, f.mgmt, want) })
	t.Logf("args taken by a forced apply as eks-a-controller were restored in %s", took)

	// Someone makes the packages controller run as another ServiceAccount:
	// apply has nothing to take back, and the Verified condition of the
	// management cluster says what is wrong, until it is put back.
	runAs := func(sa string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"serviceAccountName":%q}}}}`, sa)
		if _, err := f.mgmt.Client.AppsV1().Deployments("eksa-packages").Patch(context.Background(), "eks-anywhere-packages", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
			t.Fatal(err)
		}
	}
	runAs("default")
	f.waitFor(t, "the management cluster not Verified", func() error {
		if ok, msg := f.verified(t, "mgmt"); ok || !strings.Contains(msg, "eks-anywhere-packages runs as ServiceAccount default") {
			return fmt.Errorf("Verified %t: %s", ok, msg)
		}
		return nil
	})
	runAs("eks-anywhere-packages-serviceaccount")
	f.waitFor(t, "the management cluster Verified again", func() error {
		if ok, msg := f.verified(t, "mgmt"); !ok {
			return fmt.Errorf("%s", msg)
		}
		return nil
	})

	// w2 leaves the selection: its objects go; it joins again: they are back.
	f.label(t, "w2", map[string]any{"metrics": nil}, nil)
	f.waitFor(t, "w2 cleaned up", func() error {
		if objs := objects(t, f.workloads["w2"]); len(objs) > 0 {
			return fmt.Errorf("still %v", objs)
		}
		return nil
	})
	f.label(t, "w2", map[string]any{"metrics": "on"}, nil)
	f.waitFor(t, "w2 picked up again", func() error {
		if objs := objects(t, f.workloads["w2"]); !has(objs, "DaemonSet/"+templates.NodeDS) {
			return fmt.Errorf("%v", objs)
		}
		return nil
	})

	// w1 is paused: a spec change (kube-proxy off) reaches w2 only.
	f.label(t, "w1", nil, map[string]any{"anywhere.eks.amazonaws.com/paused": "true"})
	f.metricsConfig(t, false)
	f.waitFor(t, "kube-proxy's proxy gone from w2", func() error {
		if objs := objects(t, f.workloads["w2"]); has(objs, "DaemonSet/"+templates.NodeDS) {
			return fmt.Errorf("%v", objs)
		}
		return nil
	})
	if objs := objects(t, f.workloads["w1"]); !has(objs, "DaemonSet/"+templates.NodeDS) {
		t.Errorf("the paused w1 was changed: %v", objs)
	}
	f.waitFor(t, "w1's status saying it is paused", func() error {
		if st := fmt.Sprint(f.clusterStates(t, "default", "fleet")); !strings.Contains(st, "ClusterPaused") {
			return fmt.Errorf("%s", st)
		}
		return nil
	})

	// EKS-A is upgrading w2 (its Ready condition False): a spec change
	// (kube-proxy back on) reaches the management cluster only (w1 is paused), then w2 once it is Ready.
	setReady := func(status string) {
		t.Helper()
		c, err := f.mgmt.Dynamic.Resource(eksaClusterGVR).Namespace("default").Get(context.Background(), "w2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedSlice(c.Object, []any{map[string]any{"type": "Ready", "status": status, "reason": "UpgradeInProgress",
			"message": "test", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}, "status", "conditions")
		if _, err := f.mgmt.Dynamic.Resource(eksaClusterGVR).Namespace("default").UpdateStatus(context.Background(), c, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setReady("False")
	f.waitFor(t, "w2 seen upgrading", func() error {
		for _, c := range f.clusterStates(t, "default", "fleet") {
			if c := c.(map[string]any); c["name"] == "w2" && !strings.Contains(fmt.Sprint(c), "ClusterUpgrading") {
				return fmt.Errorf("%v", c)
			}
		}
		return nil
	})
	f.metricsConfig(t, true)
	f.waitFor(t, "kube-proxy's proxy back in the management cluster", func() error {
		if objs := objects(t, f.workloads["mgmt"]); !has(objs, "DaemonSet/"+templates.NodeDS) {
			return fmt.Errorf("%v", objs)
		}
		return nil
	})
	if objs := objects(t, f.workloads["w2"]); has(objs, "DaemonSet/"+templates.NodeDS) {
		t.Errorf("w2 was changed during its upgrade: %v", objs)
	}
	setReady("True")
	f.waitFor(t, "w2 applied after its upgrade", func() error {
		if objs := objects(t, f.workloads["w2"]); !has(objs, "DaemonSet/"+templates.NodeDS) {
			return fmt.Errorf("%v", objs)
		}
		return nil
	})

	// Stopped, then restarted while things changed: it converges.
	stop()
	f.label(t, "w1", nil, map[string]any{"anywhere.eks.amazonaws.com/paused": nil})
	if err := f.workloads["w2"].Client.RbacV1().ClusterRoles().Delete(context.Background(), templates.ReaderRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.startController(t, cnt)
	f.waitFor(t, "converged after a restart", func() error {
		w2 := objects(t, f.workloads["w2"])
		if st := f.status(t); !has(w2, "ClusterRole/"+templates.ReaderRole) || st["readyClusters"] != int64(3) {
			return fmt.Errorf("w2 %v; status %v", w2, st["readyClusters"])
		}
		return nil
	})

	// The MetricsConfig is deleted: nothing is left, and it goes.
	if err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Delete(context.Background(), "fleet", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "everything deleted", func() error {
		for name, w := range f.workloads {
			if objs := objects(t, w); len(objs) > 0 {
				mc, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(context.Background(), "fleet", metav1.GetOptions{})
				return fmt.Errorf("%s still has %v (MetricsConfig: %v %v)", name, objs, err, mc)
			}
		}
		_, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(context.Background(), "fleet", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the MetricsConfig is still there: %v", err)
		}
		return nil
	})
}

// restored overwrites an edit of the controller's, checks that the
// overwrite took (edited(false)), waits until the controller has restored
// it (edited(true)), and returns how long that took.
func (f *fleet) restored(t testing.TB, what string, overwrite func(), edited func(want bool) error) time.Duration {
	t.Helper()
	overwrite()
	start := time.Now()
	if err := edited(false); err != nil {
		t.Fatalf("the overwrite of %s did not take: %v", what, err)
	}
	f.waitFor(t, what+" restored", func() error { return edited(true) })
	return time.Since(start).Round(10 * time.Millisecond)
}

// verified returns a Cluster's Verified condition in its binding.
func (f *fleet) verified(t testing.TB, name string) (bool, string) {
	t.Helper()
	for _, c := range f.clusterStates(t, "default", "fleet") {
		c := c.(map[string]any)
		if c["name"] != name {
			continue
		}
		conds, _ := c["conditions"].([]any)
		for _, cond := range conds {
			if cond := cond.(map[string]any); cond["type"] == "Verified" {
				return cond["status"] == "True", fmt.Sprint(cond["message"])
			}
		}
		return false, "no Verified condition"
	}
	return false, "no status for " + name
}

// sidecar says whether the packages controller runs eksa-metrics' sidecar.
func sidecar(t testing.TB, cp *framework.ControlPlane, want bool) error {
	t.Helper()
	d, err := cp.Client.AppsV1().Deployments("eksa-packages").Get(context.Background(), "eks-anywhere-packages", metav1.GetOptions{})
	if err != nil {
		return err
	}
	got := false
	for _, c := range d.Spec.Template.Spec.Containers {
		got = got || c.Name == templates.SidecarName
	}
	if got != want {
		return fmt.Errorf("sidecar present: %t", got)
	}
	return nil
}

// certManagerListen says whether cert-manager's controller serves its plain
// metrics on loopback only (behind eksa-metrics' sidecar), as the
// controller's edit says.
func certManagerListen(t testing.TB, cp *framework.ControlPlane, want bool) error {
	t.Helper()
	d, err := cp.Client.AppsV1().Deployments("cert-manager").Get(context.Background(), "cert-manager", metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "cert-manager-controller" {
			if got := slices.Contains(c.Args, "--metrics-listen-address=127.0.0.1:9402"); got != want {
				return fmt.Errorf("loopback listen address: %t (args %v)", got, c.Args)
			}
			return nil
		}
	}
	return fmt.Errorf("no cert-manager-controller container")
}

func convertMap(m map[string]any, into any) error {
	b, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, into)
}
