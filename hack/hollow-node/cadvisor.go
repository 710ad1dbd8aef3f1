package main

import (
	"time"

	cadvisortesting "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
)

// fakeCadvisor is kubemark's fake cAdvisor plus a root cgroup "/" with
// synthetic CPU and memory usage, so that /metrics/resource has node_* series
// (kubemark's fake has no containers: the summary fails and
// /metrics/resource only says resource_scrape_error 1) and /metrics/cadvisor
// has container_* series for id="/". Its methods take cAdvisor's types,
// which moved in Kubernetes 1.37: cadvisor_info.go (1.36 and older) and
// cadvisor_model.go (1.37 and later, -tags cadvisormodel).
type fakeCadvisor struct {
	*cadvisortesting.Fake
	start time.Time
}

func newFakeCadvisor(nodeName string) *fakeCadvisor {
	return &fakeCadvisor{Fake: &cadvisortesting.Fake{NodeName: nodeName}, start: time.Now()}
}
