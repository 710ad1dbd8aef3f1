package validate

import (
	"slices"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
)

// The flags checked against the binaries are the flags the controller's
// admission policy lets it change (kubeadm.Flags): one list, not two.
func TestComponentFlagsAreKubeadmFlags(t *testing.T) {
	for comp, flags := range componentFlags {
		for name := range flags {
			if !slices.Contains(kubeadm.Flags[comp], name) {
				t.Errorf("%s: %s is checked against the binaries but not in kubeadm.Flags", comp, name)
			}
		}
		if len(kubeadm.Flags[comp]) != len(flags) {
			t.Errorf("%s: kubeadm.Flags %v, checked %v", comp, kubeadm.Flags[comp], flags)
		}
	}
	if len(kubeadm.Flags) != len(componentFlags) {
		t.Errorf("kubeadm.Flags has %d components, the check %d", len(kubeadm.Flags), len(componentFlags))
	}
}
