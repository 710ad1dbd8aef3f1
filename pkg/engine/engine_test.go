package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

func TestParallelRunsEveryIndexOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 100} {
		seen := make([]int32, 17)
		Parallel(context.Background(), len(seen), workers, func(i int) { atomic.AddInt32(&seen[i], 1) })
		for i, n := range seen {
			if n != 1 {
				t.Errorf("workers=%d: index %d ran %d times", workers, i, n)
			}
		}
	}
	Parallel(context.Background(), 0, 4, func(int) { t.Error("called for n=0") })
}

func TestParallelStopsHandingOutWorkWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran int32
	Parallel(ctx, 1000, 1, func(i int) {
		atomic.AddInt32(&ran, 1)
		if i == 2 {
			cancel()
		}
	})
	// One worker: after index 2 cancels, at most the index already being
	// handed over (3) runs.
	if ran > 4 {
		t.Errorf("%d calls after cancel at the third", ran)
	}
}

// A plan that replaces control-plane machines goes ahead only through the
// gate; a refusal changes nothing (no cluster is even touched here).
func TestApplyRolloutGate(t *testing.T) {
	r := &render.Result{Config: &spec.Config{ClusterName: "mgmt"}}
	steps := []*cluster.Step{{Action: cluster.Update, RollsControlPlane: true}}
	var refused *RolloutRefusedError
	if err := Apply(context.Background(), nil, r, steps, ApplyOptions{}); !errors.As(err, &refused) || refused.Cluster != "mgmt" {
		t.Errorf("no gate: got %v, want a RolloutRefusedError for mgmt", err)
	}
	if err := Apply(context.Background(), nil, r, steps, ApplyOptions{AllowRollout: func([]*cluster.Step) (bool, error) { return false, nil }}); !errors.As(err, &refused) {
		t.Errorf("gate says no: got %v", err)
	}
	boom := errors.New("no terminal to ask")
	if err := Apply(context.Background(), nil, r, steps, ApplyOptions{AllowRollout: func([]*cluster.Step) (bool, error) { return true, boom }}); !errors.Is(err, boom) {
		t.Errorf("gate fails: got %v, want its error", err)
	}
	if !RollsControlPlane(steps) || RollsControlPlane([]*cluster.Step{{Action: cluster.Create}}) {
		t.Error("RollsControlPlane")
	}
}
