package controller

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eksa-metrics/eksa-metrics/config"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// workloads keeps one connection per workload cluster, made from its
// kubeconfig Secret (and made again when the Secret's content changes),
// and with it the watches of what eksa-metrics keeps there: an edit or a
// deletion by anyone else re-plans that Cluster. It is what Cluster API's
// ClusterCache does for its controllers (a client and watches per
// cluster, dropped when the cluster goes), done here because ClusterCache
// reads the kubeconfig Secret itself (it would run the exec plugins that
// cluster.CheckSecretKubeconfig refuses) and needs the v1beta2 Cluster API
// Cluster, which EKS-A v0.24's Cluster API 1.10 does not serve.
type workloads struct {
	mu      sync.Mutex
	m       map[types.NamespacedName]*workload // by EKS-A Cluster namespace and name
	trust   bool
	drifted func(types.NamespacedName, cluster.Drift)
}

type workload struct {
	hash    [32]byte // of the kubeconfig it was made from
	cluster *cluster.Cluster
	kinds   []string           // watched: the kinds rendered there
	stop    context.CancelFunc // ends its watches
	runs    [32]byte           // digest of the Runs notes last recorded
}

// runsChanged says whether the notes of what a Cluster runs and grants
// differ from those last recorded for it, and records them: an event for
// each change (and once per connection), not for every apply of a fleet.
func (w *workloads) runsChanged(key types.NamespacedName, notes []string) bool {
	sum := sha256.Sum256([]byte(strings.Join(notes, "\n")))
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.m[key]
	if !ok {
		return true
	}
	if c.runs == sum {
		return false
	}
	c.runs = sum
	return true
}

// watch starts the watches of a Cluster's inventory in c, of these kinds.
func (w *workloads) watch(key types.NamespacedName, c *cluster.Cluster, kinds []string) (context.CancelFunc, error) {
	// The watches outlive this reconcile: until the Cluster is let go, or
	// what it renders there is of other kinds.
	watchCtx, stop := context.WithCancel(context.Background())
	if err := c.WatchInventory(watchCtx, key.Name, kinds, func(d cluster.Drift) { w.drifted(key, d) }); err != nil {
		stop()
		return nil, fmt.Errorf("watching what eksa-metrics keeps in the %s: %w", c, err)
	}
	return stop, nil
}

// rewatch restarts the watches of a known connection whose rendered kinds
// changed (a MetricsConfig that now renders ServiceMonitors, say).
func (w *workloads) rewatch(key types.NamespacedName, c *cluster.Cluster, kinds []string) error {
	w.mu.Lock()
	wl, ok := w.m[key]
	same := !ok || wl.cluster != c || slices.Equal(wl.kinds, kinds)
	w.mu.Unlock()
	if same {
		return nil
	}
	stop, err := w.watch(key, c, kinds)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur, ok := w.m[key]; ok && cur == wl {
		wl.stop()
		wl.stop, wl.kinds = stop, kinds
	} else {
		stop() // replaced or dropped meanwhile
	}
	return nil
}

// get returns the connection to a workload cluster, made from data (the
// kubeconfig read from its Secret) unless one from the same data exists,
// with the watches of the kinds rendered there.
func (w *workloads) get(ctx context.Context, key types.NamespacedName, name string, data []byte, kinds []string) (*cluster.Cluster, error) {
	sum := sha256.Sum256(data)
	w.mu.Lock()
	c, ok := w.m[key]
	w.mu.Unlock()
	if ok && c.hash == sum {
		return c.cluster, w.rewatch(key, c.cluster, kinds)
	}
	wl, err := engine.ConnectWorkload(ctx, name, data, nil, w.trust)
	if err != nil {
		return nil, err
	}
	stop, err := w.watch(key, wl, kinds)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	if old, ok := w.m[key]; ok {
		old.stop()
	}
	w.m[key] = &workload{hash: sum, cluster: wl, kinds: kinds, stop: stop}
	w.mu.Unlock()
	return wl, nil
}

// watchManagement watches what eksa-metrics keeps in the management
// cluster for the management Cluster (the controller's own connection).
func (w *workloads) watchManagement(key types.NamespacedName, mgmt *cluster.Cluster, kinds []string) error {
	w.mu.Lock()
	c, ok := w.m[key]
	w.mu.Unlock()
	if ok && c.cluster == mgmt {
		return w.rewatch(key, mgmt, kinds)
	}
	stop, err := w.watch(key, mgmt, kinds)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.m[key]; ok {
		old.stop()
	}
	w.m[key] = &workload{cluster: mgmt, kinds: kinds, stop: stop}
	return nil
}

// drop ends the connection and the watches of a Cluster let go of.
func (w *workloads) drop(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.m[key]; ok {
		c.stop()
		delete(w.m, key)
	}
}

// drifted re-plans the Cluster whose workload cluster changed.
func (r *Reconciler) drifted(key types.NamespacedName, d cluster.Drift) {
	log.Log.WithName("drift").Info("re-planning", "cluster", key.String(), "object", d.Object, "action", d.Action)
	r.driftRepairs.Add(1)
	r.results.drifted(key)
	driftRepairs.WithLabelValues(key.Namespace, key.Name).Inc()
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	r.clusterEvents <- event.GenericEvent{Object: obj}
}

// connect reaches the Cluster's workload cluster: the management cluster
// itself, or through its kubeconfig Secret.
func (r *Reconciler) connect(ctx context.Context, obj *unstructured.Unstructured, res *render.Result) (*engine.Clusters, error) {
	// The policy decides, never the Cluster's spec (admit has refused a
	// Cluster whose spec and the policy disagree).
	if r.Policy.IsManagement(obj.GetNamespace(), obj.GetName()) {
		if !res.Config.Management {
			return nil, fmt.Errorf("Cluster %s/%s rendered as a workload cluster although it is the management cluster", obj.GetNamespace(), obj.GetName())
		}
		kinds := cluster.InventoryKinds(res, append([]render.Destination{render.Management}, cluster.WorkloadDestinations...)...)
		if err := r.workloads.watchManagement(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, r.Management, kinds); err != nil {
			return nil, err
		}
		return &engine.Clusters{Management: r.Management, Workload: r.Management}, nil
	}
	if res.Config.Management {
		return nil, fmt.Errorf("Cluster %s/%s rendered as a management cluster although it is not the one the controller runs in", obj.GetNamespace(), obj.GetName())
	}
	name := res.Config.ClusterName
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	kinds := cluster.InventoryKinds(res, cluster.WorkloadDestinations...)
	// Read by name on every reconcile (the controller may neither list nor
	// watch eksa-system's Secrets): a connection is made again only when
	// the content changed.
	data, err := r.Management.WorkloadKubeconfig(ctx, name)
	if apierrors.IsForbidden(err) {
		return nil, &KubeconfigNotGrantedError{Cluster: name}
	}
	if err != nil {
		return nil, err
	}
	wl, err := r.workloads.get(ctx, key, name, data, kinds)
	if err != nil {
		return nil, err
	}
	return &engine.Clusters{Management: r.Management, Workload: wl}, nil
}

// KubeconfigNotGrantedError: the controller may not read a workload
// cluster's kubeconfig Secret. It reads those its installation names only
// (Role eksa-system/eksa-metrics-controller-kubeconfigs), never the
// management cluster's own nor the CA keys beside them.
type KubeconfigNotGrantedError struct{ Cluster string }

func (e *KubeconfigNotGrantedError) Error() string {
	return fmt.Sprintf("the controller may not read Secret %s/%s: it reads the kubeconfigs of the workload clusters its installation names only. Add the Cluster to them: print the manifests again with --workload-cluster %s beside the others and apply them (Role %s/%s)",
		EKSASystemNamespace, spec.KubeconfigSecret(e.Cluster), e.Cluster, EKSASystemNamespace, config.KubeconfigRole)
}
