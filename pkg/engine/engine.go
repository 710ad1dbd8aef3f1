// Package engine is what eksa-metrics does, whoever drives it: the command
// line (internal/cli) and the controller call the same functions, as Helm's
// pkg/action and clusterctl's client serve their commands. It connects to
// clusters (from kubeconfig files or a rest.Config), plans and applies a
// render (pkg/render) behind a control-plane rollout gate, prunes what a
// changed spec no longer renders, waits with readiness functions a
// reconciler can call too, and verifies live. It never prints: it returns
// values and errors, and reports progress as events.
package engine

import (
	"context"
	"runtime"
	"sync"
)

// Parallel calls fn(0..n-1) on at most workers goroutines (GOMAXPROCS when
// workers < 1) and waits for them all; a cancelled ctx stops handing out
// work. Results go where fn puts them, by index, so that the outcome does not
// depend on scheduling.
func Parallel(ctx context.Context, n, workers int, fn func(i int)) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				fn(i)
			}
		}()
	}
loop:
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break loop
		}
	}
	close(jobs)
	wg.Wait()
}
