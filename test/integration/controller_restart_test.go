package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/config"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// writesTo counts the writes an API server has answered, from its own
// apiserver_request_total (whoever sent them), but the leases it renews
// itself.
func writesTo(t testing.TB, cp *framework.ControlPlane) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, req := range framework.RequestsOf(t, cp.Client) {
		switch verb, resource := req.Labels["verb"], req.Labels["resource"]; verb {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
			if resource != "leases" {
				out[verb+" "+resource] += req.Count
			}
		}
	}
	return out
}

// writes are the write requests among a counter's (but the Lease's:
// its renewals, and the event leader election records about it in the
// controller's namespace): how many, and which.
func writes(reqs map[string]int) (int, []string) {
	total, out := 0, []string{}
	for k, n := range reqs {
		method, path, _ := strings.Cut(k, " ")
		switch method {
		case "POST", "PUT", "PATCH", "DELETE":
			// Not writes of the fleet's state: the leader Lease, the
			// controller's events, and the one SelfSubjectReview with which
			// run learns at start who its admission policy must hold (a
			// review persists nothing).
			if !strings.Contains(path, "/leases/") && path != "/api/v1/namespaces/"+config.DefaultNamespace+"/events" && path != "/apis/authentication.k8s.io/v1/selfsubjectreviews" {
				total += n
				out = append(out, fmt.Sprintf("%s ×%d", k, n))
			}
		}
	}
	return total, out
}

// writesSince sums the writes the API servers answered since before.
func writesSince(t testing.TB, f *fleet, before map[string]map[string]float64) (float64, []string) {
	total, what := 0.0, []string{}
	for name, w := range f.workloads {
		after := writesTo(t, w)
		for k, v := range after {
			if d := v - before[name][k]; d != 0 {
				total += d
				what = append(what, fmt.Sprintf("%s: %s +%v", name, k, d))
			}
		}
	}
	return total, what
}

func allWrites(t testing.TB, f *fleet) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for name, w := range f.workloads {
		out[name] = writesTo(t, w)
	}
	return out
}

// bindingTable is what `kubectl get metricsconfigbindings` shows: the API
// server's table of the CRD's printer columns, one row per binding.
func (f *fleet) bindingTable(t testing.TB) map[string]map[string]string {
	t.Helper()
	raw, err := f.mgmt.Client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.anywhere.eks.amazonaws.com/v1alpha1/namespaces/default/metricsconfigbindings").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, row := range table.Rows {
		cells := map[string]string{}
		for i, col := range table.ColumnDefinitions {
			cells[col.Name] = fmt.Sprint(row.Cells[i])
		}
		out[cells["Name"]] = cells
	}
	return out
}

// A restart costs reads, not writes: a controller restarted against a
// converged fleet sends no write to the workload API servers (by their own
// apiserver_request_total) nor to the management API server (but its
// Lease), and each Cluster's state is there at once, in its
// MetricsConfigBinding (what `kubectl get mcb` shows). What changed while
// it was down is done after the restart: a MetricsConfig edited is
// re-applied, a Cluster that left the selection is released (its objects
// gone from its workload cluster, its binding deleted).
func TestControllerRestartWritesNothing(t *testing.T) {
	f := newFleet(t, "w1", "w2")
	cnt := &counter{reqs: map[string]int{}}
	stop := f.startController(t, cnt)
	f.metricsConfig(t, true)
	f.waitFor(t, "2 of 2 applied and verified", func() error {
		if st := f.status(t); st["readyClusters"] != int64(2) || st["selectedClusters"] != int64(2) {
			return fmt.Errorf("%v", st)
		}
		for _, name := range []string{"w1", "w2"} {
			if ok, msg := f.verified(t, name); !ok {
				return fmt.Errorf("%s: %s", name, msg)
			}
		}
		return nil
	})
	atRest(t, cnt)
	stop()
	table := f.bindingTable(t)
	for _, name := range []string{"w1", "w2"} {
		row := table[name+".fleet"]
		if row["Cluster"] != name || row["Config"] != "fleet" || row["Applied"] != "True" || row["Verified"] != "True" || row["Reason"] != "Verified" {
			t.Errorf("kubectl get mcb: row %s.fleet is %v", name, row)
		}
	}
	mc, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(context.Background(), "fleet", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(mc.Object)
	t.Logf("the MetricsConfig is %d bytes; the bindings: %v", len(raw), table)

	// Restarted against the converged fleet.
	before := allWrites(t, f)
	reconciles := gathered(t, "controller_runtime_reconcile_total")
	cnt.reset()
	stop = f.startController(t, cnt)
	if st := f.status(t); st["readyClusters"] != int64(2) {
		t.Errorf("the status right after the restart: %v", st)
	}
	// Both Clusters reconciled (their plans read everything), and what
	// those reconciles caused is done.
	framework.WaitFor(t, "both Clusters reconciled after the restart", time.Minute, func() (bool, error) {
		n := gathered(t, "controller_runtime_reconcile_total") - reconciles
		return n >= 3, fmt.Errorf("%v reconciles", n) // two Clusters and the MetricsConfig
	})
	time.Sleep(5 * time.Second)
	if n, w := writes(cnt.reset()); n > 0 {
		t.Errorf("after a restart against a converged fleet the controller wrote to the management cluster: %v", w)
	}
	if n, w := writesSince(t, f, before); n > 0 {
		t.Errorf("after a restart against a converged fleet the workload API servers answered writes: %v", w)
	}

	// Down again: the MetricsConfig is edited (kube-proxy off) and w2
	// leaves the selection.
	stop()
	f.metricsConfig(t, false)
	f.label(t, "w2", map[string]any{"metrics": "off"}, nil)
	stop = f.startController(t, cnt)
	defer stop()
	f.waitFor(t, "w1 re-applied, w2 released", func() error {
		if objs := objects(t, f.workloads["w1"]); has(objs, "DaemonSet/"+templates.NodeDS) || !has(objs, "ClusterRole/"+templates.ReaderRole) {
			return fmt.Errorf("w1 has %v", objs)
		}
		if objs := objects(t, f.workloads["w2"]); len(objs) > 0 {
			return fmt.Errorf("w2 still has %v", objs)
		}
		if _, err := f.mgmt.Dynamic.Resource(bindingGVR).Namespace("default").Get(context.Background(), "w2.fleet", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the binding w2.fleet is still there (%v)", err)
		}
		if st := f.status(t); st["readyClusters"] != int64(1) || st["selectedClusters"] != int64(1) {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
}

// An object of a rendered name in a workload cluster that eksa-metrics did
// not create is never taken over: the Cluster's binding says which object
// (reason ForeignObject, not Unreachable, which the fleet alert pages for),
// nothing is written to that cluster, and once its owner removes it the
// Cluster is applied on the next retry.
func TestControllerTakesOverNoObjectItDidNotCreate(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "w1")
	w1 := f.workloads["w1"]
	theirs := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: templates.ReaderRole}}
	if _, err := w1.Client.RbacV1().ClusterRoles().Create(ctx, theirs, metav1.CreateOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	before := allWrites(t, f)
	stop := f.startController(t, &counter{reqs: map[string]int{}})
	defer stop()
	f.metricsConfig(t, true)
	f.clusterCondition(t, "default", "fleet", "w1", "Applied", "ForeignObject", "ClusterRole "+templates.ReaderRole+" exists in the workload cluster and eksa-metrics did not create it")
	if v := fleetMetric(t, "eksa_metrics_cluster_unreachable", map[string]string{"cluster": "w1"}); v != 0 {
		t.Errorf("a foreign object counts as an unreachable cluster: eksa_metrics_cluster_unreachable %v", v)
	}
	if n, w := writesSince(t, f, before); n > 0 {
		t.Errorf("the controller wrote to a cluster whose plan found a foreign object: %v", w)
	}
	if err := w1.Client.RbacV1().ClusterRoles().Delete(ctx, templates.ReaderRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.clusterCondition(t, "default", "fleet", "w1", "Applied", "Applied", "")
}
