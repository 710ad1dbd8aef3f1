package integration

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/eksa-metrics/eksa-metrics/pkg/output"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The GitOps rows of the day-two matrix: the `-o kustomize` output of spec A,
// then of spec B, synced the way Flux's kustomize-controller does it
// (fluxcd/pkg ssa: kustomize build, server-side apply with ownership forced
// under field manager kustomize-controller, then every object of the last
// revision's inventory that this revision does not render is deleted unless
// it carries kustomize.toolkit.fluxcd.io/prune: disabled). The clusters must
// equal a fresh sync of B, and EKS-A's KubeadmControlPlane, which the render
// holds as a partial object, is never deleted: each row that takes an item
// out of it (bindAddress back to proxy, z-page gates, TLS 1.3 back to 1.2,
// etcd's extensive metrics back to basic) gives the item back instead.
func TestGitOpsTransitionsMatchAFreshSync(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster per spec")
	}
	base := variant{name: "base (proxy)", metrics: transitionBase}
	var variants []variant
	for _, v := range transitionVariants {
		for _, w := range []string{"bindAddress with allowInsecure", "etcd extensive", "z-pages (their gates)", "TLS 1.3", "kube-prometheus-stack", "excluded", "cert-manager"} {
			if strings.Contains(v.name, w) {
				variants = append(variants, v)
			}
		}
	}

	fresh := map[string]map[string]string{}
	for _, v := range append([]variant{base}, variants...) {
		cp, _, _ := transitionCluster(t, false)
		flux := &fluxSync{t: t, cp: cp}
		flux.sync(transitionSpec(t, v))
		fresh[v.name] = snapshot(t, cp)
		cp.APIServer.Stop()
		cp.Etcd.Stop()
	}

	cp, _, _ := transitionCluster(t, false)
	flux := &fluxSync{t: t, cp: cp}
	chain := []variant{base}
	for _, v := range variants {
		chain = append(chain, v, base)
	}
	flux.sync(transitionSpec(t, base))
	for i := 1; i < len(chain); i++ {
		from, to := chain[i-1], chain[i]
		pruned := flux.sync(transitionSpec(t, to))
		if kcp, err := cp.Dynamic.Resource(kcpGVR(spec.CAPIv1beta2)).Namespace("eksa-system").Get(context.Background(), "test", metav1.GetOptions{}); err != nil || kcp.GetDeletionTimestamp() != nil {
			t.Fatalf("%s -> %s: the sync deleted EKS-A's KubeadmControlPlane (Cluster API would now delete the control-plane machines): %v", from.name, to.name, err)
		}
		if slices.ContainsFunc(pruned, func(s string) bool { return strings.HasPrefix(s, "KubeadmControlPlane ") }) {
			t.Errorf("%s -> %s: the sync pruned the KubeadmControlPlane", from.name, to.name)
		}
		if d := stateDiff(snapshot(t, cp), fresh[to.name]); len(d) > 0 {
			t.Errorf("%s -> %s (GitOps): the clusters differ from a fresh sync of %s in %d places:\n  %s", from.name, to.name, to.name, len(d), strings.Join(d, "\n  "))
		} else {
			t.Logf("| %s | %s | state equal | %d pruned |", from.name, to.name, len(pruned))
		}
	}
}

// fluxSync is one Flux Kustomization per part of the render (management,
// workload, prometheus), all pointed at one cluster (a management cluster
// is its own workload cluster), with prune: true.
type fluxSync struct {
	t         *testing.T
	cp        *framework.ControlPlane
	inventory map[string]inventoryEntry // by "Kind namespace/name"
}

type inventoryEntry struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

// sync builds the kustomize output of the spec with kustomize's own krusty,
// applies it as kustomize-controller does, prunes what left the inventory,
// and returns what it pruned.
func (f *fluxSync) sync(specPath string) (pruned []string) {
	t := f.t
	t.Helper()
	r := renderPath(t, specPath)
	files, err := output.Files(r)
	if err != nil {
		t.Fatal(err)
	}
	fs := filesys.MakeFsInMemory()
	for name, data := range files {
		if err := fs.WriteFile(path.Join("/repo", name), data); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	next := map[string]inventoryEntry{}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, part := range render.Destinations {
		if _, ok := files[string(part)+"/kustomization.yaml"]; !ok {
			continue
		}
		resMap, err := k.Run(fs, path.Join("/repo", string(part)))
		if err != nil {
			t.Fatalf("kustomize build %s/: %v", part, err)
		}
		var objs []map[string]any
		for _, res := range resMap.Resources() {
			m, err := res.Map()
			if err != nil {
				t.Fatal(err)
			}
			u := unstructured.Unstructured{Object: m}
			next[fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())] = inventoryEntry{u.GroupVersionKind(), u.GetNamespace(), u.GetName()}
			objs = append(objs, m)
		}
		if err := f.cp.Apply(ctx, "kustomize-controller", true, objs...); err != nil {
			t.Fatalf("sync %s/: %v", part, err)
		}
	}
	mapper := f.cp.Mapper()
	for key, e := range f.inventory {
		if _, ok := next[key]; ok {
			continue
		}
		res, err := f.cp.Resource(mapper, e.gvk, e.namespace)
		if err != nil {
			t.Fatal(err)
		}
		live, err := res.Get(ctx, e.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if live.GetAnnotations()["kustomize.toolkit.fluxcd.io/prune"] == "disabled" {
			continue
		}
		if err := res.Delete(ctx, e.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		pruned = append(pruned, key)
	}
	f.inventory = next
	slices.Sort(pruned)
	return pruned
}
