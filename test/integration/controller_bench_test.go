package integration

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// BenchmarkControllerFleet200 measures the controller on 200 EKS-A Cluster
// objects (the two workload API servers of the fleet, each behind 100
// Clusters' kubeconfig Secrets): the time from the MetricsConfig's creation
// to 200 of 200 applied, the requests it sent, and the heap of the test
// process (controller included) at the end.
// go test -run '^$' -bench ControllerFleet200 -benchtime 1x ./test/integration/
func BenchmarkControllerFleet200(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchFleet(b, 200)
	}
}

// BenchmarkControllerFleet2000 is the same with 2,000 Clusters (1,000 behind
// each workload API server), each watched in its workload cluster.
// go test -run '^$' -bench ControllerFleet2000 -benchtime 1x -timeout 40m ./test/integration/
func BenchmarkControllerFleet2000(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchFleet(b, 2000)
	}
}

func benchFleet(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	f := newFleet(b, "w1", "w2")
	kubeconfigs := map[string][]byte{}
	for _, w := range []string{"w1", "w2"} {
		s, err := f.mgmt.Client.CoreV1().Secrets("eksa-system").Get(ctx, w+"-kubeconfig", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		kubeconfigs[w] = s.Data["value"]
	}
	clusterDoc, err := f.mgmt.Dynamic.Resource(eksaClusterGVR).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 2; i < n; i++ {
		name := fmt.Sprintf("c%03d", i)
		target := []string{"w1", "w2"}[i%2]
		if _, err := f.mgmt.Client.CoreV1().Secrets("eksa-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: "eksa-system"},
			Data: map[string][]byte{"value": kubeconfigs[target]}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		c := clusterDoc.DeepCopy()
		c.SetName(name)
		c.SetResourceVersion("")
		c.SetUID("")
		c.SetManagedFields(nil)
		if _, err := f.mgmt.Dynamic.Resource(eksaClusterGVR).Namespace("default").Create(ctx, c, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		f.eksaSystemObjects(b, "default", name)
	}
	cnt := &counter{reqs: map[string]int{}}
	// As `controller run` runs by default: --cluster-concurrency 8.
	f.startControllerWith(b, cnt, func(o *cli.ControllerOptions) { o.Concurrency = 8 })
	start := time.Now()
	f.metricsConfig(b, true)
	framework.WaitFor(b, fmt.Sprintf("%d of %d applied", n, n), 30*time.Minute, func() (bool, error) {
		st := f.status(b)
		return st["readyClusters"] == int64(n), fmt.Errorf("%v of %d", st["readyClusters"], n)
	})
	elapsed := time.Since(start)
	reqs := 0
	for _, c := range cnt.reset() {
		reqs += c
	}
	runtime.GC()
	if path := os.Getenv("EKSA_METRICS_HEAPPROFILE"); path != "" {
		// go tool pprof -top -sample_index=inuse_space <test binary> <path>
		if out, err := os.Create(path); err == nil {
			_ = pprof.WriteHeapProfile(out)
			_ = out.Close()
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(elapsed.Seconds(), "s/fleet")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "clusters/s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(reqs)/float64(n), "mgmt-requests/cluster")
	mc, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(ctx, "fleet", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := mc.MarshalJSON()
	b.ReportMetric(float64(len(raw))/1024, "status-KiB")
	b.Logf("%d Clusters applied in %s (%.1f/s); %d requests to the management API server; heap in use %.0f MiB",
		n, elapsed.Round(100*time.Millisecond), float64(n)/elapsed.Seconds(), reqs, float64(ms.HeapInuse)/(1<<20))
}
