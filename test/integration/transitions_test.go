package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The day-two matrix: for every row, the clusters after applying spec A and
// then spec B equal a fresh apply of B; the writes apply made (by the API
// server's audit log) are exactly those `validate -f B --from A` predicted;
// the control plane rolls exactly when it was predicted to; no plain-HTTP
// listener leaves loopback unless B allows it. The rows are walked as one
// chain on one management cluster (nothing -> base -> variant -> base ->
// next variant ... -> nothing), which takes each variant in both
// directions; each spec's fresh state comes from a cluster of its own. A
// row whose specs render the same is no row: the test fails on one.

// transitionBase is the base row: proxy mode, one scraper, Kubernetes 1.36,
// EKS-A v0.26.1, on the docker management cluster.
const transitionBase = "  scrapers: [{kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}]\n"

type variant struct {
	name, metrics, kube string
}

var transitionVariants = []variant{
	{"bindAddress with allowInsecure", transitionBase + "  exposure: bindAddress\n  allowInsecure: true\n", ""},
	{"bindAddress without the plain-HTTP components", transitionBase + "  exposure: bindAddress\n  components: {etcd: {enabled: false}, kubeProxy: {enabled: false}}\n", ""},
	{"kubeProxy off", transitionBase + "  components: {kubeProxy: {enabled: false}}\n", ""},
	{"etcd and scheduler off", transitionBase + "  components: {etcd: {enabled: false}, kubeScheduler: {enabled: false}}\n", ""},
	{"etcd extensive", transitionBase + "  components: {etcd: {metricsLevel: extensive}}\n", ""},
	{"z-pages on", transitionBase + "  zPages: {statusz: true, flagz: true}\n", ""},
	{"Kubernetes 1.35 with z-pages (their gates)", transitionBase + "  zPages: {statusz: true, flagz: true}\n", "1.35"},
	{"Kubernetes 1.35", transitionBase, "1.35"},
	{"TLS 1.3", transitionBase + "  tls: {minVersion: VersionTLS13}\n", ""},
	{"certificates none", transitionBase + "  tls: {certificates: none}\n", ""},
	{"certificates from cert-manager", transitionBase + "  tls: {certificates: cert-manager}\n", ""},
	{"a second scraper", "  scrapers: [{kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}, {kind: ServiceAccount, name: prometheus, namespace: telemetry}]\n", ""},
	{"kube-prometheus-stack", transitionBase + "  scrapeConfig: {stack: kube-prometheus-stack, release: kps}\n", ""},
	{"adot stack", "  scrapers: [{kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}, {kind: ServiceAccount, name: adot-collector, namespace: observability}]\n  scrapeConfig: {stack: adot}\n", ""},
	{"plain prometheus stack", transitionBase + "  scrapeConfig: {stack: prometheus}\n", ""},
	{"Kubernetes 1.34", transitionBase, "1.34"},
	{"Kubernetes 1.34 with z-pages", transitionBase + "  zPages: {statusz: true, flagz: true}\n", "1.34"},
	{"no ServiceMonitors", transitionBase + "  scrapeConfig: {serviceMonitors: false}\n", ""},
	{"kubelet serving certificates", transitionBase + "  tls: {kubeletServingCertificates: true}\n  images: {eksaMetrics: registry.example.com/eksa-metrics:v0.0.0-it}\n", ""},
	{"management component excluded", transitionBase + "  managementComponents: {exclude: [capi-system/capi-controller-manager, eksa-packages/eks-anywhere-packages]}\n", ""},
}

// transitionCluster is a management cluster as EKS-A leaves it: the CRDs,
// EKS-A's KubeadmControlPlane, kubeadm's kube-proxy configuration, the
// management components' Deployments of the docker provider, the
// scrapers' ServiceAccounts; with the audit log of every write by the
// admin, which apply runs as. With certManager, the real cert-manager
// controller runs there too (as an identity of its own, so that its writes
// are not apply's).
func transitionCluster(t testing.TB, certManager bool) (cp *framework.ControlPlane, kubeconfig, audit string) {
	t.Helper()
	cp, audit = auditedControlPlane(t)
	ctx := context.Background()
	cp.InstallCRDs(t, "v1beta2")
	if err := cp.Apply(ctx, "eks-a-controller", true, eksaKCP(t, "docker.v1beta2", "v1beta2")); err != nil {
		t.Fatal(err)
	}
	cp.InstallUpstream(t, "eksa-controller-manager-v0.26.1.yaml", "capi-core-v1.13.2.yaml", "capi-kubeadm-bootstrap-v1.13.2.yaml",
		"capi-kubeadm-control-plane-v1.13.2.yaml", "capd-v1.13.2.yaml", "etcdadm-bootstrap-provider-v1.0.22.yaml",
		"etcdadm-controller-v1.0.28.yaml", "eks-anywhere-packages-v0.4.17.yaml", "cert-manager-v1.20.2.yaml")
	kubeProxy := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": kubeproxy.Name, "namespace": kubeproxy.Namespace},
		"data": map[string]any{kubeproxy.Key: framework.KubeadmKubeProxyConfig}}
	if err := cp.Apply(ctx, "kubeadm", true, kubeProxy); err != nil {
		t.Fatal(err)
	}
	cp.ServiceAccount(t, "monitoring", "prometheus-k8s")
	cp.ServiceAccount(t, "telemetry", "prometheus")
	cp.ServiceAccount(t, "observability", "adot-collector")
	cp.InstallCRDDir(t, "cert-manager")
	if certManager {
		cp.StartGarbageCollector(t)
		framework.Start(t, "cert-manager", framework.Binary(t, "cert-manager-controller"),
			[]string{"--kubeconfig", cp.Kubeconfig(t, "cert-manager", "system:cert-manager", "system:masters"), "--cluster-resource-namespace", templates.CertManagerNS})
	}
	return cp, cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters"), audit
}

// auditedControlPlane is a control plane whose API server logs every write
// of the admin (whom apply runs as) to audit.
func auditedControlPlane(t testing.TB) (cp *framework.ControlPlane, audit string) {
	t.Helper()
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	audit = filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["kubernetes-admin"]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cp = framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion, APIServerArgs: kubeadm.Args{
		{Name: "audit-policy-file", Value: policy}, {Name: "audit-log-path", Value: audit}, {Name: "audit-log-format", Value: "json"},
		{Name: "audit-log-mode", Value: "blocking"},
	}})
	return cp, audit
}

// transitionSpec writes a variant's spec ("" metrics: the Cluster alone,
// with no metrics section).
func transitionSpec(t testing.TB, v variant) string {
	t.Helper()
	kube := v.kube
	if kube == "" {
		kube = "1.36"
	}
	p := writeSpecVersion(t, "docker", v.metrics, kube, "v0.26.1")
	if v.metrics == "" {
		raw, _ := os.ReadFile(p)
		s := string(raw)
		if err := os.WriteFile(p, []byte(s[:strings.Index(s, "\n---\napiVersion: metrics.anywhere.eks.amazonaws.com")]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// stateKinds are what a snapshot reads: every kind eksa-metrics creates, and
// those it edits.
var stateKinds = []schema.GroupVersionResource{
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "services"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"},
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"},
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"},
	{Group: kubeadm.Group, Version: "v1beta2", Resource: "kubeadmcontrolplanes"},
}

// snapshot is, by "resource namespace/name", everything eksa-metrics writes
// or edits, without what the API server assigns (UIDs, versions, times,
// managed fields, cluster IPs) and without the bytes of keys and
// certificates (compared by name, type and keys).
func snapshot(t *testing.T, cp *framework.ControlPlane) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvr := range stateKinds {
		list, err := cp.Dynamic.Resource(gvr).List(context.Background(), metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			ours := it.GetLabels()[templates.ManagedByLabel] == templates.Prefix
			edited := gvr.Resource == "deployments" || gvr.Resource == "kubeadmcontrolplanes" ||
				gvr.Resource == "configmaps" && it.GetNamespace() == kubeproxy.Namespace && it.GetName() == kubeproxy.Name
			if !ours && !edited {
				continue
			}
			obj := it.Object
			delete(obj, "status")
			md := obj["metadata"].(map[string]any)
			for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
				delete(md, k)
			}
			// The DaemonSet controller's count of template changes.
			unstructured.RemoveNestedField(obj, "metadata", "annotations", "deprecated.daemonset.template.generation")
			unstructured.RemoveNestedField(obj, "spec", "clusterIP")
			unstructured.RemoveNestedField(obj, "spec", "clusterIPs")
			if it.GetLabels()[templates.CertificateLabel] != "" {
				if data, ok := obj["data"].(map[string]any); ok {
					for k := range data {
						data[k] = "(bytes)"
					}
				}
			}
			if ann, ok, _ := unstructured.NestedStringMap(obj, "spec", "template", "metadata", "annotations"); ok {
				// The serial of the certificate HAProxy's pods last
				// restarted for: a record of a restart (as kubectl's
				// restartedAt), which a fresh apply has no need of.
				maps.DeleteFunc(ann, func(k, _ string) bool { return strings.HasPrefix(k, templates.CertificateLabel+"-") })
				if len(ann) == 0 {
					unstructured.RemoveNestedField(obj, "spec", "template", "metadata", "annotations")
				} else {
					_ = unstructured.SetNestedStringMap(obj, ann, "spec", "template", "metadata", "annotations")
				}
			}
			if gvr.Resource == "kubeadmcontrolplanes" {
				sortExtraArgs(obj)
			}
			b, _ := json.Marshal(obj)
			out[gvr.Resource+" "+it.GetNamespace()+"/"+it.GetName()] = string(b)
		}
	}
	return out
}

// sortExtraArgs orders a v1beta2 KubeadmControlPlane's extraArgs by name:
// the list is a listType=map with unique names (the CRD's rule), a set to
// server-side apply and to kubeadm, which writes one flag per item. Its
// order is history, not state: the v1beta1 to v1beta2 conversion sorts a
// map's keys, and an item applied later comes later.
func sortExtraArgs(obj map[string]any) {
	for _, comp := range kubeadm.Components() {
		path := append([]string{"spec", "kubeadmConfigSpec", "clusterConfiguration"}, comp.Path()...)
		args, ok, _ := unstructured.NestedSlice(obj, path...)
		if !ok {
			continue
		}
		slices.SortFunc(args, func(a, b any) int {
			na, _ := a.(map[string]any)["name"].(string)
			nb, _ := b.(map[string]any)["name"].(string)
			return strings.Compare(na, nb)
		})
		_ = unstructured.SetNestedSlice(obj, args, path...)
	}
}

// stateDiff lists the keys where two snapshots differ.
func stateDiff(got, want map[string]string) []string {
	var out []string
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		g, okg := got[k]
		w, okw := want[k]
		switch {
		case !okw:
			out = append(out, fmt.Sprintf("%s is there, and a fresh apply has none:\n    %s", k, g))
		case !okg:
			out = append(out, fmt.Sprintf("%s is missing, and a fresh apply has it:\n    %s", k, w))
		case g != w:
			out = append(out, fmt.Sprintf("%s differs:\n    got   %s\n    fresh %s", k, g, w))
		}
	}
	return out
}

// auditWrites are the writes the audit log holds from offset on, as
// "write|delete resource namespace/name" (namespaces and server dry runs
// left out: a dry run persists nothing, and apply creates a namespace it
// needs without listing it), and the new offset.
func auditWrites(t *testing.T, path string, offset int64) (map[string]bool, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := offset
	for sc.Scan() {
		n += int64(len(sc.Bytes())) + 1
		var ev struct {
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			Stage      string `json:"stage"`
			ObjectRef  struct {
				Resource, Namespace, Name string
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Stage != "ResponseComplete" || ev.ResponseStatus.Code >= 300 || strings.Contains(ev.RequestURI, "dryRun=All") || ev.ObjectRef.Resource == "namespaces" {
			continue
		}
		verb := "write"
		if ev.Verb == "delete" {
			verb = "delete"
		}
		out[verb+" "+ev.ObjectRef.Resource+" "+ev.ObjectRef.Namespace+"/"+ev.ObjectRef.Name] = true
	}
	return out, n
}

// predicted are the writes of validate's upgrade-diff, as auditWrites names
// them, with the control-plane rollout and the pods that restart.
func predicted(t *testing.T, from, to string) (writes map[string]bool, rolls bool, restarts []string) {
	t.Helper()
	code, res, stderr := runValidate(t, "-f", to, "--from", from, "--skip", "render-warnings")
	r, ok := res["upgrade-diff"]
	if !ok || code == 1 || r.Status == validate.Fail {
		t.Fatalf("validate --from: exit %d, %+v\n%s", code, r, stderr)
	}
	writes = map[string]bool{}
	for _, ch := range r.Changes {
		if ch.By != "" {
			continue // not apply's (the Cluster's kubeletConfiguration, in cluster.yaml)
		}
		verb := "write"
		if ch.Action == render.ActionDelete {
			verb = "delete"
		}
		writes[verb+" "+strings.ToLower(ch.Kind)+"s "+ch.Namespace+"/"+ch.Name] = true
		if ch.Kind == "ConfigMap" && ch.Name == kubeproxy.Name && ch.Namespace == kubeproxy.Namespace {
			// The edit restarts kube-proxy: a patch of its DaemonSet,
			// which this cluster does not have (apply then skips it).
			restarts = append(restarts, "DaemonSet kube-system/kube-proxy")
		}
		rolls = rolls || ch.RollsControlPlane
		if ch.Restarts != "" && ch.Action != render.ActionCreate && ch.Kind != "ConfigMap" {
			restarts = append(restarts, ch.Kind+" "+ch.Namespace+"/"+ch.Name)
		}
	}
	sort.Strings(restarts)
	return writes, rolls, slices.Compact(restarts)
}

// templates of the Deployments and DaemonSets, to see which restarted.
func podTemplates(t *testing.T, cp *framework.ControlPlane) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{{Group: "apps", Version: "v1", Resource: "deployments"}, {Group: "apps", Version: "v1", Resource: "daemonsets"}} {
		list, err := cp.Dynamic.Resource(gvr).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			tmpl, _, _ := unstructured.NestedMap(it.Object, "spec", "template")
			b, _ := json.Marshal(tmpl)
			out[it.GetKind()+" "+it.GetNamespace()+"/"+it.GetName()] = string(b)
		}
	}
	return out
}

// restartedSince lists, sorted, the Deployments and DaemonSets whose pod
// template changed since podTemplates returned before.
func restartedSince(t *testing.T, cp *framework.ControlPlane, before map[string]string) []string {
	t.Helper()
	var out []string
	for k, tmpl := range podTemplates(t, cp) {
		if was, ok := before[k]; ok && was != tmpl {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func kcpGeneration(t *testing.T, cp *framework.ControlPlane) int64 {
	t.Helper()
	return liveKCP(t, cp, spec.CAPIv1beta2).GetGeneration()
}

// plainHTTPListeners: what the cluster's state exposes as plain HTTP beyond
// loopback (kube-proxy's metricsBindAddress, etcd's listen-metrics-urls).
func plainHTTPListeners(t *testing.T, cp *framework.ControlPlane) []string {
	t.Helper()
	var out []string
	cm, err := cp.Client.CoreV1().ConfigMaps(kubeproxy.Namespace).Get(context.Background(), kubeproxy.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := kubeproxy.Parse([]byte(cm.Data[kubeproxy.Key]))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.MetricsBindAddress; a != "" && !strings.HasPrefix(a, "127.") {
		out = append(out, "kube-proxy metricsBindAddress "+a)
	}
	if v := liveArgs(t, liveKCP(t, cp, spec.CAPIv1beta2), kubeadm.Etcd.Path())["listen-metrics-urls"]; v != "" && !strings.Contains(v, "127.0.0.1") {
		out = append(out, "etcd listen-metrics-urls "+v)
	}
	return out
}

type transitionRow struct {
	from, to                             string
	equal                                bool
	predictedWrites, performedWrites     int
	predictedRolls, performedRolls       bool
	predictedRestarts, performedRestarts int
	writesMatch, restartsMatch           bool
}

func TestTransitionsMatchAFreshApply(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster per spec")
	}
	nothing := variant{name: "no metrics section"}
	base := variant{name: "base (proxy)", metrics: transitionBase}
	variants := transitionVariants
	if only := os.Getenv("EKSA_METRICS_TRANSITIONS"); only != "" {
		// A developer's shortcut: the variants whose names contain one
		// of the comma-separated words.
		variants = slices.DeleteFunc(slices.Clone(variants), func(v variant) bool {
			return !slices.ContainsFunc(strings.Split(only, ","), func(w string) bool { return strings.Contains(v.name, w) })
		})
		t.Logf("EKSA_METRICS_TRANSITIONS=%s: %d of %d variants", only, len(variants), len(transitionVariants))
	}

	// The fresh state of every spec, each on a cluster of its own.
	fresh := map[string]map[string]string{}
	for _, v := range append([]variant{base}, variants...) {
		cp, kubeconfig, _ := transitionCluster(t, strings.Contains(v.metrics, "cert-manager"))
		if code, stderr, _ := apply(t, 0, "-f", transitionSpec(t, v), "--kubeconfig", kubeconfig, "--allow-control-plane-rollout"); code != 0 {
			t.Fatalf("fresh %s: exit %d:\n%s", v.name, code, stderr)
		}
		fresh[v.name] = snapshot(t, cp)
		cp.APIServer.Stop()
		cp.Etcd.Stop()
	}

	cp, kubeconfig, audit := transitionCluster(t, true)
	fresh[nothing.name] = snapshot(t, cp)
	chain := []variant{nothing, base}
	for _, v := range variants {
		chain = append(chain, v, base)
	}
	// Uninstall: the metrics section removed, applied with --uninstall.
	chain = append(chain, nothing)
	_, offset := auditWrites(t, audit, 0)
	var rows []transitionRow
	for i := 1; i < len(chain); i++ {
		from, to := chain[i-1], chain[i]
		row := transitionRow{from: from.name, to: to.name}
		writes, rolls, restarts := predicted(t, transitionSpec(t, from), transitionSpec(t, to))
		gen, templatesBefore := kcpGeneration(t, cp), podTemplates(t, cp)
		args := []string{"-f", transitionSpec(t, to), "--kubeconfig", kubeconfig, "--allow-control-plane-rollout"}
		if to.metrics == "" {
			args = append(args, "--uninstall")
		}
		if code, stderr, _ := apply(t, 0, args...); code != 0 {
			t.Fatalf("%s -> %s: exit %d:\n%s\n%s", from.name, to.name, code, stderr, certificateConditions(t, cp))
		}
		var performed map[string]bool
		performed, offset = auditWrites(t, audit, offset)
		row.predictedWrites, row.performedWrites = len(writes), len(performed)
		if len(writes) == 0 && to.kube == from.kube {
			t.Errorf("%s -> %s: nothing changes, so the row proves nothing: make the variant differ from the base", from.name, to.name)
		}
		// kube-proxy's restart patches a DaemonSet this cluster does not
		// have: a write that is predicted and refused (404, not logged).
		row.writesMatch = equalSets(writes, performed)
		if !row.writesMatch {
			t.Errorf("%s -> %s: validate --from predicted writes that apply did not make, or missed some:\n  predicted only: %v\n  performed only: %v",
				from.name, to.name, minus(writes, performed), minus(performed, writes))
		}
		row.predictedRolls, row.performedRolls = rolls, kcpGeneration(t, cp) != gen
		if row.predictedRolls != row.performedRolls {
			t.Errorf("%s -> %s: control-plane rollout predicted %t, performed %t", from.name, to.name, rolls, row.performedRolls)
		}
		restarted := restartedSince(t, cp, templatesBefore)
		kubeProxyRestart := slices.Contains(restarts, "DaemonSet kube-system/kube-proxy")
		if kubeProxyRestart {
			restarts = slices.DeleteFunc(restarts, func(s string) bool { return s == "DaemonSet kube-system/kube-proxy" })
		}
		row.predictedRestarts, row.performedRestarts = len(restarts), len(restarted)
		row.restartsMatch = slices.Equal(restarts, restarted)
		if !row.restartsMatch {
			t.Errorf("%s -> %s: pods restart, predicted %v, performed %v", from.name, to.name, restarts, restarted)
		}
		if d := stateDiff(snapshot(t, cp), fresh[to.name]); len(d) > 0 {
			t.Errorf("%s -> %s: the clusters differ from a fresh apply of %s in %d places:\n  %s", from.name, to.name, to.name, len(d), strings.Join(d, "\n  "))
		} else {
			row.equal = true
		}
		if open := plainHTTPListeners(t, cp); len(open) > 0 && !strings.Contains(to.metrics, "allowInsecure: true") {
			t.Errorf("%s -> %s: plain HTTP beyond loopback without allowInsecure: %v", from.name, to.name, open)
		}
		rows = append(rows, row)
	}

	t.Log("| from | to | state equal | writes predicted / performed | rollout predicted / performed | restarts predicted / performed |")
	for _, r := range rows {
		t.Logf("| %s | %s | %t | %d / %d%s | %t / %t | %d / %d |", r.from, r.to, r.equal, r.predictedWrites, r.performedWrites,
			map[bool]string{true: "", false: " (differ)"}[r.writesMatch], r.predictedRolls, r.performedRolls, r.predictedRestarts, r.performedRestarts)
	}
}

func equalSets(a, b map[string]bool) bool { return len(minus(a, b)) == 0 && len(minus(b, a)) == 0 }

func minus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// BenchmarkTransitions times the matrix' apply pairs on one management
// cluster: from the base to each variant and back, as the test walks them.
func BenchmarkTransitions(b *testing.B) {
	base := variant{name: "base (proxy)", metrics: transitionBase}
	// cert-manager runs for the row that moves the certificates to it;
	// its issuance is part of that pair's time.
	_, kubeconfig, _ := transitionCluster(b, true)
	specs := map[string]string{base.name: transitionSpec(b, base)}
	for _, v := range transitionVariants {
		specs[v.name] = transitionSpec(b, v)
	}
	run := func(name string) {
		if code, stderr, _ := apply(b, 0, "-f", specs[name], "--kubeconfig", kubeconfig, "--allow-control-plane-rollout"); code != 0 {
			b.Fatalf("%s: exit %d:\n%s", name, code, stderr)
		}
	}
	run(base.name)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, v := range transitionVariants {
			run(v.name)
			run(base.name)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*len(transitionVariants)), "s/pair")
}

// certificateConditions are cert-manager's conditions on every Certificate,
// for a failure's message.
func certificateConditions(t *testing.T, cp *framework.ControlPlane) string {
	list, err := cp.Dynamic.Resource(certificateGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, it := range list.Items {
		conds, _, _ := unstructured.NestedSlice(it.Object, "status", "conditions")
		fmt.Fprintf(&b, "Certificate %s/%s: %v\n", it.GetNamespace(), it.GetName(), conds)
	}
	return b.String()
}

// The EKS Anywhere v0.24 -> v0.25 row: the upgrade moves Cluster API to
// v1.11, whose KubeadmControlPlane is stored as v1beta2 (extraArgs a list
// of name and value, not a map) and converted by its webhook; EKS-A then
// re-applies its own KubeadmControlPlane as v1beta2. The same metrics
// section before and after: validate --from predicts what apply then
// writes (by the audit log), the control plane rolls only if predicted,
// and the clusters equal a fresh apply of the v0.25 spec on a cluster
// upgraded the same way without eksa-metrics. An EKS-A upgrade has one direction: EKS-A
// does not downgrade.
func TestTransitionAcrossTheV1beta2Contract(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two clusters")
	}
	zPages := transitionBase + "  zPages: {statusz: true, flagz: true}\n"
	for _, tc := range []struct{ name, from, to string }{
		{"the same section", zPages, zPages},
		// Items written in v1beta1 (a map) and removed by a v1beta2 apply
		// (a list): server-side apply tracks them across the conversion.
		{"z-pages off with the upgrade", zPages, transitionBase},
	} {
		t.Run(tc.name, func(t *testing.T) { transitionAcrossV1beta2(t, tc.from, tc.to) })
	}
}

func transitionAcrossV1beta2(t *testing.T, fromMetrics, toMetrics string) {
	from := writeSpecVersion(t, "vsphere-external-etcd", fromMetrics, "1.34", "v0.24.6")
	to := writeSpecVersion(t, "vsphere-external-etcd", toMetrics, "1.34", "v0.25.0")
	ctx := context.Background()
	cluster := func(storage string) (*framework.ControlPlane, string, string) {
		cp, audit := auditedControlPlane(t)
		cp.InstallCRDs(t, spec.CAPIv1beta2)
		cp.ServeKCPVersions(t, storage)
		if err := cp.Apply(ctx, "eks-a-controller", true, eksaKCP(t, "vsphere-external-etcd."+storage, storage)); err != nil {
			t.Fatal(err)
		}
		kubeProxy := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": kubeproxy.Name, "namespace": kubeproxy.Namespace},
			"data": map[string]any{kubeproxy.Key: framework.KubeadmKubeProxyConfig}}
		if err := cp.Apply(ctx, "kubeadm", true, kubeProxy); err != nil {
			t.Fatal(err)
		}
		cp.ServiceAccount(t, "monitoring", "prometheus-k8s")
		return cp, cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters"), audit
	}

	// The upgrade: Cluster API v1.11's CRD stores v1beta2; EKS-A v0.25
	// re-applies its KubeadmControlPlane in that version.
	upgrade := func(cp *framework.ControlPlane) {
		cp.ServeKCPVersions(t, spec.CAPIv1beta2)
		if err := cp.Apply(ctx, "eks-a-controller", true, eksaKCP(t, "vsphere-external-etcd.v1beta2", spec.CAPIv1beta2)); err != nil {
			t.Fatalf("EKS-A v0.25's apply: %v", err)
		}
	}

	// Fresh: the same cluster history without eksa-metrics (the
	// conversion orders extraArgs by name, which EKS-A's re-apply keeps),
	// then the v0.25 spec applied once.
	fcp, fkubeconfig, _ := cluster(spec.CAPIv1beta1)
	upgrade(fcp)
	if code, stderr, _ := apply(t, 0, "-f", to, "--kubeconfig", fkubeconfig, "--allow-control-plane-rollout"); code != 0 {
		t.Fatalf("fresh v0.25: exit %d:\n%s", code, stderr)
	}
	fresh := snapshot(t, fcp)
	fcp.APIServer.Stop()
	fcp.Etcd.Stop()

	cp, kubeconfig, audit := cluster(spec.CAPIv1beta1)
	if code, stderr, _ := apply(t, 0, "-f", from, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout"); code != 0 {
		t.Fatalf("v0.24: exit %d:\n%s", code, stderr)
	}
	upgrade(cp)
	_, offset := auditWrites(t, audit, 0)
	writes, rolls, restarts := predicted(t, from, to)
	gen, templatesBefore := kcpGeneration(t, cp), podTemplates(t, cp)
	if code, stderr, _ := apply(t, 0, "-f", to, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout"); code != 0 {
		t.Fatalf("v0.24 -> v0.25: exit %d:\n%s", code, stderr)
	}
	performed, _ := auditWrites(t, audit, offset)
	if !equalSets(writes, performed) {
		t.Errorf("validate --from predicted writes that apply did not make, or missed some:\n  predicted only: %v\n  performed only: %v",
			minus(writes, performed), minus(performed, writes))
	}
	if performedRolls := kcpGeneration(t, cp) != gen; performedRolls != rolls {
		t.Errorf("control-plane rollout predicted %t, performed %t", rolls, performedRolls)
	}
	restarted := restartedSince(t, cp, templatesBefore)
	restarts = slices.DeleteFunc(restarts, func(s string) bool { return s == "DaemonSet kube-system/kube-proxy" })
	if !slices.Equal(restarts, restarted) {
		t.Errorf("pods restart, predicted %v, performed %v", restarts, restarted)
	}
	if d := stateDiff(snapshot(t, cp), fresh); len(d) > 0 {
		t.Errorf("the clusters differ from a fresh apply of the v0.25 spec in %d places:\n  %s", len(d), strings.Join(d, "\n  "))
	}
	t.Logf("| v0.24.6 (v1beta1) | v0.25.0 (v1beta2) | state equal %t | writes predicted %d / performed %d %v | rollout predicted %t |",
		len(stateDiff(snapshot(t, cp), fresh)) == 0, len(writes), len(performed), slices.Sorted(maps.Keys(performed)), rolls)
}
