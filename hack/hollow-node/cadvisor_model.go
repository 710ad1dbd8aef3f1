//go:build cadvisormodel

// The fake cAdvisor for Kubernetes 1.37 and later, whose kubelet takes
// cAdvisor's lib/model types (k8s.io/kubernetes v1.37.2
// pkg/kubelet/cadvisor/types.go); the same root cgroup as cadvisor_info.go.

package main

import (
	"time"

	cadvisorapi "github.com/google/cadvisor/lib/model"
)

// rootStats: 0.25 core busy since start, 512 MiB working set.
func (f *fakeCadvisor) rootStats(now time.Time) *cadvisorapi.ContainerStats {
	return &cadvisorapi.ContainerStats{
		Timestamp: now,
		Cpu:       &cadvisorapi.CpuStats{Usage: cadvisorapi.CpuUsage{Total: uint64(now.Sub(f.start).Nanoseconds() / 4)}},
		CpuInst:   &cadvisorapi.CpuInstStats{Usage: cadvisorapi.CpuInstUsage{Total: 250_000_000}},
		Memory:    &cadvisorapi.MemoryStats{Usage: 768 << 20, WorkingSet: 512 << 20, RSS: 384 << 20},
	}
}

func (f *fakeCadvisor) spec() cadvisorapi.ContainerSpec {
	return cadvisorapi.ContainerSpec{CreationTime: f.start, HasCpu: true, HasMemory: true}
}

func (f *fakeCadvisor) ContainerInfoV2(name string, _ cadvisorapi.RequestOptions) (map[string]cadvisorapi.ContainerInfo, error) {
	if name != "/" {
		return map[string]cadvisorapi.ContainerInfo{}, nil
	}
	return map[string]cadvisorapi.ContainerInfo{"/": {
		ContainerReference: cadvisorapi.ContainerReference{Name: "/"},
		Spec:               f.spec(),
		Stats:              []*cadvisorapi.ContainerStats{f.rootStats(time.Now())},
	}}, nil
}

func (f *fakeCadvisor) GetRequestedContainersInfo(name string, _ cadvisorapi.RequestOptions) (map[string]*cadvisorapi.ContainerInfo, error) {
	return map[string]*cadvisorapi.ContainerInfo{"/": {
		ContainerReference: cadvisorapi.ContainerReference{Name: "/"},
		Spec:               f.spec(),
		Stats:              []*cadvisorapi.ContainerStats{f.rootStats(time.Now())},
	}}, nil
}
