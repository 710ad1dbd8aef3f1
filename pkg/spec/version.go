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
