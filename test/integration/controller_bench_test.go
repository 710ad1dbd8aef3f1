package integration

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// BenchmarkControllerFleet measures the controller on a fleet whose every
// Cluster has a workload API server of its own, as real Clusters have
// (EKSA_METRICS_BENCH_CLUSTERS of them, default 20: this machine runs a few
// dozen API servers at most; a fleet of Clusters that share an API server
// does not converge, since neither apply nor the controller takes over an
// object eksa-metrics created for another Cluster). It reports the first
// pass (time, requests, CPU and heap per Cluster) and a restart against
// the converged fleet (writes to the workload and management API servers,
// time until every Cluster was reconciled again).
// go test -run '^$' -bench 'ControllerFleet$' -benchtime 1x -timeout 60m ./test/integration/
func BenchmarkControllerFleet(b *testing.B) {
	n := 20
	if v, err := strconv.Atoi(os.Getenv("EKSA_METRICS_BENCH_CLUSTERS")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < b.N; i++ {
		names := make([]string, n)
		for j := range names {
			names[j] = fmt.Sprintf("c%03d", j)
		}
		benchFleet(b, newFleet(b, names...), n)
	}
}

// gathered sums a counter of the controller's registry (it runs in the
// test process).
func gathered(b testing.TB, name string) float64 { return sumOf(b, name, (*dto.Metric).GetCounter) }

// clusterReconciles is the sum and count of the Cluster controller's
// reconcile durations so far (controller-runtime's histogram).
func clusterReconciles(b *testing.B) (float64, uint64) {
	var sum float64
	var count uint64
	for _, m := range seriesOf(b, "controller_runtime_reconcile_time_seconds") {
		for _, l := range m.GetLabel() {
			if l.GetName() == "controller" && l.GetValue() == "cluster" {
				sum += m.GetHistogram().GetSampleSum()
				count += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return sum, count
}

// appliedSince counts the Clusters whose last successful apply, as the
// controller's eksa_metrics_cluster_last_applied_timestamp_seconds says,
// is not older than since (whole seconds).
func appliedSince(b *testing.B, since time.Time) int {
	n := 0
	for _, m := range seriesOf(b, "eksa_metrics_cluster_last_applied_timestamp_seconds") {
		if m.GetGauge().GetValue() >= float64(since.Unix()) {
			n++
		}
	}
	return n
}

func sumOf[T interface{ GetValue() float64 }](b testing.TB, name string, value func(*dto.Metric) T) float64 {
	sum := 0.0
	for _, m := range seriesOf(b, name) {
		sum += value(m).GetValue()
	}
	return sum
}

// seriesOf gathers the controller's registry and returns the series of
// one metric.
func seriesOf(b testing.TB, name string) []*dto.Metric {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

// cpu is the CPU time used so far by the controller (the test process it
// runs in), the management API server and etcd, and the workload API
// servers and etcds together.
func (f *fleet) cpu(b *testing.B) map[string]time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	out := map[string]time.Duration{"controller": time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	add := func(part string, p *framework.Process) {
		d, err := p.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		out[part] += d
	}
	add("mgmt-apiserver", f.mgmt.APIServer)
	add("mgmt-etcd", f.mgmt.Etcd)
	for _, w := range f.workloads {
		if w != f.mgmt {
			add("workload-apiservers", w.APIServer)
			add("workload-etcds", w.Etcd)
		}
	}
	return out
}

// profileFleet writes, into dir, 40 s CPU profiles of the test process
// (the controller) and of the management and w1 API servers, taken 10 s
// into the first pass: go tool pprof -top <dir>/<name>.cpu
func profileFleet(b *testing.B, f *fleet, dir string) {
	time.Sleep(10 * time.Second)
	out, err := os.Create(filepath.Join(dir, "controller.cpu"))
	if err != nil {
		b.Log(err)
		return
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		b.Log(err)
		return
	}
	var wg sync.WaitGroup
	for name, cp := range map[string]*framework.ControlPlane{"mgmt": f.mgmt, "c000": f.workloads["c000"]} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := cp.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "40").Timeout(90 * time.Second).DoRaw(context.Background())
			if err != nil {
				b.Logf("profiling the %s API server: %v", name, err)
				return
			}
			_ = os.WriteFile(filepath.Join(dir, name+".cpu"), raw, 0o600)
		}()
	}
	wg.Wait()
	pprof.StopCPUProfile()
}

func benchFleet(b *testing.B, f *fleet, n int) {
	b.Helper()
	ctx := context.Background()
	cnt := &counter{reqs: map[string]int{}}
	// As `controller run` runs by default: --cluster-concurrency 16
	// (EKSA_METRICS_BENCH_CONCURRENCY sets another).
	opts := func(o *cli.ControllerOptions) {
		o.Concurrency = 16
		if v, err := strconv.Atoi(os.Getenv("EKSA_METRICS_BENCH_CONCURRENCY")); err == nil {
			o.Concurrency = v
		}
	}
	stop := f.startControllerWith(b, cnt, opts)
	// The registry is the process's: another benchmark of the same run
	// counted before this one.
	repairs0, reconciles0 := gathered(b, "eksa_metrics_drift_repairs_total"), gathered(b, "controller_runtime_reconcile_total")
	cpu0 := f.cpu(b)
	took0, took0n := clusterReconciles(b)
	start := time.Now()
	if dir := os.Getenv("EKSA_METRICS_PROFILE_DIR"); dir != "" {
		go profileFleet(b, f, dir)
	}
	f.metricsConfig(b, true)
	// The controller runs in this process: its gauges say how many Clusters
	// are applied without a request (polling the MetricsConfig, of 240 KiB
	// at 2,000 Clusters, cost the management API server as much as the
	// controller's own status writes). An earlier benchmark's controller
	// left series of the same Cluster names: only those applied since this
	// pass began count. Then the status says so too: the time is until then.
	framework.WaitFor(b, fmt.Sprintf("%d of %d applied", n, n), 30*time.Minute, func() (bool, error) {
		// Gathering 10,000 series five times a second cost the process a
		// twentieth of its CPU: once a second is precise enough here.
		time.Sleep(800 * time.Millisecond)
		applied := appliedSince(b, start)
		return applied == n, fmt.Errorf("%v of %d", applied, n)
	})
	framework.WaitFor(b, fmt.Sprintf("the status of %d of %d applied", n, n), 5*time.Minute, func() (bool, error) {
		st := f.status(b)
		return st["readyClusters"] == int64(n), fmt.Errorf("%v of %d", st["readyClusters"], n)
	})
	elapsed := time.Since(start)
	cpu := f.cpu(b)
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
	// After the GC: the live objects (what the heap profile shows); in-use
	// spans (heap-MiB) hold them and their size classes' slack.
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-live-MiB")
	b.ReportMetric(float64(reqs)/float64(n), "mgmt-requests/cluster")
	b.ReportMetric(gathered(b, "eksa_metrics_drift_repairs_total")-repairs0, "drift-repairs")
	b.ReportMetric((gathered(b, "controller_runtime_reconcile_total")-reconciles0)/float64(n), "reconciles/cluster")
	// How long one Cluster's reconcile took on average: with
	// --cluster-concurrency of them at once, what bounds the pass where
	// the CPU does not.
	if took, tookn := clusterReconciles(b); tookn > took0n {
		b.ReportMetric((took-took0)/float64(tookn-took0n), "s/reconcile")
	}
	// Where the machine's CPU went during the pass, per Cluster: what a
	// fleet spends on the controller's node and the management cluster,
	// and what it spends in the workload clusters, which here share the
	// same cores.
	var total time.Duration
	for _, part := range slices.Sorted(maps.Keys(cpu)) {
		d := cpu[part] - cpu0[part]
		total += d
		b.ReportMetric(float64(d.Milliseconds())/float64(n), part+"-cpu-ms/cluster")
	}
	b.ReportMetric(total.Seconds()/elapsed.Seconds(), "cores-busy")
	mc, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(ctx, "fleet", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if dir := os.Getenv("EKSA_METRICS_PROFILE_DIR"); dir != "" {
		for name, cp := range map[string]*framework.ControlPlane{"mgmt": f.mgmt, "c000": f.workloads["c000"]} {
			if raw, err := cp.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); err == nil {
				_ = os.WriteFile(filepath.Join(dir, name+".metrics"), raw, 0o600)
			}
		}
	}
	raw, _ := mc.MarshalJSON()
	b.ReportMetric(float64(len(raw))/1024, "status-KiB")
	b.Logf("%d Clusters applied in %s (%.1f/s); %d requests to the management API server; heap in use %.0f MiB",
		n, elapsed.Round(100*time.Millisecond), float64(n)/elapsed.Seconds(), reqs, float64(ms.HeapInuse)/(1<<20))
	if list, err := f.mgmt.Dynamic.Resource(bindingGVR).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != n {
		b.Errorf("kubectl get mcb: %v bindings of %d (%v)", len(list.Items), n, err)
	}

	// A restart against the converged fleet: what it writes to the workload
	// API servers (their own apiserver_request_total) and to the management
	// API server (but its Lease), and how long until every Cluster has been
	// reconciled again.
	stop()
	before := allWrites(b, f)
	_, reconciled0 := clusterReconciles(b)
	cnt.reset()
	start = time.Now()
	stop = f.startControllerWith(b, cnt, opts)
	defer stop()
	framework.WaitFor(b, "every Cluster reconciled after the restart", 30*time.Minute, func() (bool, error) {
		time.Sleep(800 * time.Millisecond)
		_, c := clusterReconciles(b)
		return c-reconciled0 >= uint64(n), fmt.Errorf("%d of %d", c-reconciled0, n)
	})
	converged := time.Since(start)
	time.Sleep(5 * time.Second) // what those reconciles caused
	mgmtWrites, what := writes(cnt.reset())
	workloadWrites, wwhat := writesSince(b, f, before)
	b.ReportMetric(converged.Seconds(), "restart-s")
	b.ReportMetric(float64(mgmtWrites), "restart-mgmt-writes")
	b.ReportMetric(workloadWrites, "restart-workload-writes")
	b.Logf("restart: every Cluster reconciled in %s; writes to the management API server %v, to the workload API servers %v", converged.Round(100*time.Millisecond), what, wwhat)
}
