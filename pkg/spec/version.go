package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// KubeVersion is a Kubernetes minor version, as EKS-A's kubernetesVersion.
type KubeVersion struct{ Major, Minor int }

// ParseKubeVersion accepts "1.34" (EKS-A's form), "v1.34" and "1.34.2".
func ParseKubeVersion(s string) (KubeVersion, error) {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return KubeVersion{}, fmt.Errorf("%q is not a Kubernetes version such as \"1.34\"", s)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return KubeVersion{}, fmt.Errorf("%q is not a Kubernetes version such as \"1.34\"", s)
	}
	return KubeVersion{major, minor}, nil
}

func (v KubeVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// AtLeast reports whether v >= 1.minor.
func (v KubeVersion) AtLeast(minor int) bool {
	return v.Major > 1 || (v.Major == 1 && v.Minor >= minor)
}

// Supported Kubernetes versions.
var (
	MinKube = KubeVersion{1, 28}
	MaxKube = KubeVersion{1, 37}
)

// Z-page facts (KEP-4827, KEP-4828): the kube-controller-manager, scheduler,
// kubelet and kube-proxy serve them from 1.33 behind alpha gates; the gates
// are beta and on by default from 1.36.
const (
	ZPagesMinMinor       = 33
	ZPagesDefaultOnMinor = 36
)

// ZPageGatesNeeded reports whether the ComponentStatusz/ComponentFlagz gates
// must be set explicitly on this version.
func (v KubeVersion) ZPageGatesNeeded() bool {
	return v.AtLeast(ZPagesMinMinor) && !v.AtLeast(ZPagesDefaultOnMinor)
}

// EKSAVersion is an EKS Anywhere release version such as v0.26.1.
type EKSAVersion struct{ Major, Minor, Patch int }

// ParseEKSAVersion parses "v0.26.1" (the v is optional).
func ParseEKSAVersion(s string) (EKSAVersion, error) {
	core, _, _ := strings.Cut(strings.TrimPrefix(s, "v"), "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return EKSAVersion{}, fmt.Errorf("%q is not an EKS Anywhere version such as \"v0.26.1\"", s)
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return EKSAVersion{}, fmt.Errorf("%q is not an EKS Anywhere version such as \"v0.26.1\"", s)
		}
		n[i] = x
	}
	return EKSAVersion{n[0], n[1], n[2]}, nil
}

func (v EKSAVersion) String() string { return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Less orders versions.
func (v EKSAVersion) Less(o EKSAVersion) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

// EKS-A versions that matter here.
var (
	MinEKSA = EKSAVersion{0, 20, 0}
	// EKSAv1beta2 is the first release on the CAPI v1beta2 contract.
	EKSAv1beta2 = EKSAVersion{0, 25, 0}
)

// EKSAv0_26 is the release that added Kubernetes 1.36, dropped 1.29 and
// removed the CloudStack provider.
var EKSAv0_26 = EKSAVersion{0, 26, 0}

// KubeRange is the range of Kubernetes minors (inclusive) an EKS Anywhere
// release supports, as far as eksa-metrics knows it: v0.24 1.28-1.34,
// v0.25 1.29-1.35, v0.26 1.30-1.36 (EKS-A docs/data/version_support.yml);
// from v0.20 to v0.23 each release added one minor (1.30 in v0.20 to 1.33 in
// v0.23), older minors down to MinKube are accepted. A release newer than
// v0.26 supports at least 1.30 and at most MaxKube.
func (v EKSAVersion) KubeRange() (lo, hi int) {
	switch {
	case v.Major > 0 || v.Minor > EKSAv0_26.Minor:
		return EKSAv0_26.Minor + 4, MaxKube.Minor
	case v.Minor >= 24:
		return v.Minor + 4, v.Minor + 10
	default:
		return MinKube.Minor, v.Minor + 10
	}
}

// FirstEKSAFor is the first EKS Anywhere minor release that supports
// Kubernetes 1.minor (v0.20 for 1.30 and older).
func FirstEKSAFor(minor int) EKSAVersion {
	return EKSAVersion{0, max(minor-10, MinEKSA.Minor), 0}
}

// EKSARange is the range of EKS Anywhere releases the cluster may run,
// inclusive: the one release spec.eksaVersion names; without it, what the
// Cluster API contract allows (v0.20.0 to the last v0.24 for v1beta1, v0.25.0
// and later for v1beta2). hi is nil when the range has no end.
func (c *Config) EKSARange() (lo EKSAVersion, hi *EKSAVersion) {
	switch {
	case c.EKSAVersion != nil:
		v := *c.EKSAVersion
		return v, &v
	case c.CAPIVersion == CAPIv1beta1:
		last := EKSAVersion{0, EKSAv1beta2.Minor - 1, math.MaxInt}
		return MinEKSA, &last
	default:
		return EKSAv1beta2, nil
	}
}

// CAPI KubeadmControlPlane API versions.
const (
	CAPIv1beta1 = "v1beta1"
	CAPIv1beta2 = "v1beta2"
)
