//go:build !cadvisormodel

// The fake cAdvisor for Kubernetes 1.36 and older, whose kubelet takes
// cAdvisor's info/v1 and info/v2 types (hack/build-kubernetes.sh builds
// 1.37 and later with -tags cadvisormodel: cadvisor_model.go).

package main

import (
	"time"

	cadvisorv1 "github.com/google/cadvisor/info/v1"
	cadvisorv2 "github.com/google/cadvisor/info/v2"
)

// rootStats: 0.25 core busy since start, 512 MiB working set.
func (f *fakeCadvisor) rootStats(now time.Time) *cadvisorv1.ContainerStats {
	return &cadvisorv1.ContainerStats{
		Timestamp: now,
		Cpu:       cadvisorv1.CpuStats{Usage: cadvisorv1.CpuUsage{Total: uint64(now.Sub(f.start).Nanoseconds() / 4)}},
		Memory:    cadvisorv1.MemoryStats{Usage: 768 << 20, WorkingSet: 512 << 20, RSS: 384 << 20},
	}
}

func (f *fakeCadvisor) spec() cadvisorv1.ContainerSpec {
	return cadvisorv1.ContainerSpec{CreationTime: f.start, HasCpu: true, HasMemory: true}
}

func (f *fakeCadvisor) ContainerInfoV2(name string, _ cadvisorv2.RequestOptions) (map[string]cadvisorv2.ContainerInfo, error) {
	if name != "/" {
		return map[string]cadvisorv2.ContainerInfo{}, nil
	}
	now := time.Now()
	s := f.rootStats(now)
	return map[string]cadvisorv2.ContainerInfo{"/": {
		Spec: cadvisorv2.ContainerSpec{CreationTime: f.start, HasCpu: true, HasMemory: true},
		Stats: []*cadvisorv2.ContainerStats{{
			Timestamp: now,
			Cpu:       &s.Cpu,
			CpuInst:   &cadvisorv2.CpuInstStats{Usage: cadvisorv2.CpuInstUsage{Total: 250_000_000}},
			Memory:    &s.Memory,
		}},
	}}, nil
}

func (f *fakeCadvisor) GetRequestedContainersInfo(name string, _ cadvisorv2.RequestOptions) (map[string]*cadvisorv1.ContainerInfo, error) {
	return map[string]*cadvisorv1.ContainerInfo{"/": {
		ContainerReference: cadvisorv1.ContainerReference{Name: "/"},
		Spec:               f.spec(),
		Stats:              []*cadvisorv1.ContainerStats{f.rootStats(time.Now())},
	}}, nil
}
