package spec

import "fmt"

// EKSARelease is one minor release of EKS Anywhere as eksa-metrics knows it:
// the Kubernetes minors it supports, the KubeadmControlPlane contract it
// renders, whether it still has the CloudStack provider. EKSAReleases has
// one row per release, oldest first; adding a release is adding a row (and
// its management catalog rows: pkg/components, which a test holds to this
// table). docs/reference.md "Supported versions" is rendered from it.
type EKSARelease struct {
	Minor int // v0.<Minor>
	// KubeMin and KubeMax are the Kubernetes minors (1.<n>) it supports.
	KubeMin, KubeMax int
	// Contract is the Cluster API contract of its KubeadmControlPlane.
	Contract string
	// CloudStack: the CloudStack provider is still in the release.
	CloudStack bool
	// Source is where the row comes from; Unconfirmed says what of it is
	// assumed rather than read upstream.
	Source, Unconfirmed string
}

// Version is the release's first version, v0.<Minor>.0.
func (r EKSARelease) Version() EKSAVersion { return EKSAVersion{0, r.Minor, 0} }

const versionSupport = "aws/eks-anywhere docs/data/version_support.yml"

// EKSAReleases: v0.20 to v0.23 each added one Kubernetes minor (1.30 in
// v0.20); eksa-metrics accepts their older minors down to 1.28, the oldest it
// supports.
var EKSAReleases = []EKSARelease{
	{Minor: 20, KubeMin: 28, KubeMax: 30, Contract: CAPIv1beta1, CloudStack: true, Source: versionSupport},
	{Minor: 21, KubeMin: 28, KubeMax: 31, Contract: CAPIv1beta1, CloudStack: true, Source: versionSupport},
	{Minor: 22, KubeMin: 28, KubeMax: 32, Contract: CAPIv1beta1, CloudStack: true, Source: versionSupport},
	{Minor: 23, KubeMin: 28, KubeMax: 33, Contract: CAPIv1beta1, CloudStack: true, Source: versionSupport},
	{Minor: 24, KubeMin: 28, KubeMax: 34, Contract: CAPIv1beta1, CloudStack: true, Source: versionSupport},
	{Minor: 25, KubeMin: 29, KubeMax: 35, Contract: CAPIv1beta2, CloudStack: true, Source: versionSupport + "; Cluster API v1.11 (the v1beta2 contract) in the v0.25 bundle"},
	{Minor: 26, KubeMin: 30, KubeMax: 36, Contract: CAPIv1beta2, Source: versionSupport + "; CloudStack removed: docs/content/en/docs/whatsnew/changelog.md v0.26.0"},
	{Minor: 27, KubeMin: 30, KubeMax: 37, Contract: CAPIv1beta2, Source: "aws/eks-anywhere v0.27.0 release notes (Kubernetes 1.37, Cluster API v1.14.3)",
		Unconfirmed: "the oldest Kubernetes minor: version_support.yml of v0.27 was not available, so 1.30 stays accepted"},
}

// KubeRelease is one Kubernetes minor as eksa-metrics knows it: how its
// components serve z-pages and statusz, and whether they serve native
// histograms by default. KubeReleases has one row per minor eksa-metrics
// supports, oldest first; adding a Kubernetes version is adding a row, its
// EKS Anywhere release's KubeMax, and its test bed version where it is one.
type KubeRelease struct {
	Minor int // 1.<Minor>
	// ZPages: how kube-controller-manager, kube-scheduler, the kubelet and
	// kube-proxy serve /statusz and /flagz (KEP-4827, KEP-4828).
	ZPages ZPageSupport
	// Statusz is the newest structured form of /statusz (the Accept
	// header's v=...), empty where there is only text.
	Statusz string
	// NativeHistograms: the components serve native histograms by default
	// (NativeHistograms, KEP-5808) to a scraper that asks for protobuf.
	NativeHistograms bool
	Source           string
}

// ZPageSupport is whether and how the components serve z-pages.
type ZPageSupport int

const (
	// ZPagesNone: no z-pages.
	ZPagesNone ZPageSupport = iota
	// ZPagesAlpha: behind the ComponentStatusz and ComponentFlagz gates,
	// which must be set.
	ZPagesAlpha
	// ZPagesBeta: the gates are on by default.
	ZPagesBeta
)

func (z ZPageSupport) String() string {
	return [...]string{"none", "alpha (gates set)", "beta (on by default)"}[z]
}

const zpagesSource = "k8s.io/component-base zpages/features/kube_features.go"

// KubeReleases, from kubernetes/kubernetes at each minor: the gates'
// VersionedSpecs and k8s.io/apiserver pkg/server/statusz/statusz.go.
var KubeReleases = []KubeRelease{
	{Minor: 28, Source: "z-pages from 1.33 (KEP-4827, KEP-4828)"},
	{Minor: 29, Source: "z-pages from 1.33"},
	{Minor: 30, Source: "z-pages from 1.33"},
	{Minor: 31, Source: "z-pages from 1.33"},
	{Minor: 32, Source: "z-pages from 1.33"},
	{Minor: 33, ZPages: ZPagesAlpha, Source: zpagesSource + " v0.33"},
	{Minor: 34, ZPages: ZPagesAlpha, Source: zpagesSource + " v0.34"},
	{Minor: 35, ZPages: ZPagesAlpha, Statusz: "v1alpha1", Source: zpagesSource + " v0.35; statusz.go v0.35"},
	{Minor: 36, ZPages: ZPagesBeta, Statusz: "v1beta1", Source: zpagesSource + " v0.36; statusz.go v0.36"},
	{Minor: 37, ZPages: ZPagesBeta, Statusz: "v1beta1", NativeHistograms: true,
		Source: zpagesSource + " v0.37.2; statusz.go v0.37.2; component-base metrics/features/kube_features.go v0.37.2 (NativeHistograms beta, on)"},
}

// Supported Kubernetes versions and EKS Anywhere releases: the tables' ends.
var (
	MinKube = KubeVersion{1, KubeReleases[0].Minor}
	MaxKube = KubeVersion{1, KubeReleases[len(KubeReleases)-1].Minor}
	MinEKSA = EKSAReleases[0].Version()
	// EKSAv1beta2 is the first release on the CAPI v1beta2 contract.
	EKSAv1beta2 = firstEKSA(func(r EKSARelease) bool { return r.Contract == CAPIv1beta2 })
	// EKSACloudStackRemoved is the release that removed the CloudStack
	// provider (v0.26.0).
	EKSACloudStackRemoved = firstEKSA(func(r EKSARelease) bool { return !r.CloudStack })
	// NewestEKSA is the newest release in the table.
	NewestEKSA = EKSAReleases[len(EKSAReleases)-1].Version()
)

func firstEKSA(match func(EKSARelease) bool) EKSAVersion {
	for _, r := range EKSAReleases {
		if match(r) {
			return r.Version()
		}
	}
	panic("spec: no EKS Anywhere release matches") // a table error
}

// Release is the table row of v's minor release; a release newer than the
// table is taken as the newest row (known reports false).
func (v EKSAVersion) Release() (r EKSARelease, known bool) {
	for _, r := range EKSAReleases {
		if v.Major == 0 && v.Minor == r.Minor {
			return r, true
		}
	}
	if NewestEKSA.Less(v) {
		return EKSAReleases[len(EKSAReleases)-1], false
	}
	return EKSAReleases[0], false
}

// KubeRange is the range of Kubernetes minors (inclusive) the release
// supports (EKSAReleases).
func (v EKSAVersion) KubeRange() (lo, hi int) {
	r, _ := v.Release()
	return r.KubeMin, r.KubeMax
}

// FirstEKSAFor is the first EKS Anywhere minor release that supports
// Kubernetes 1.minor.
func FirstEKSAFor(minor int) EKSAVersion {
	for _, r := range EKSAReleases {
		if r.KubeMin <= minor && minor <= r.KubeMax {
			return r.Version()
		}
	}
	return NewestEKSA
}

// Kube is the table row of the Kubernetes minor (the nearest row outside
// the table).
func (v KubeVersion) Kube() KubeRelease {
	for _, r := range KubeReleases {
		if v.Major == 1 && v.Minor == r.Minor {
			return r
		}
	}
	if v.AtLeast(MaxKube.Minor) {
		return KubeReleases[len(KubeReleases)-1]
	}
	return KubeReleases[0]
}

// ZPagesMinMinor is the first minor whose components serve z-pages.
var ZPagesMinMinor = firstKube(func(r KubeRelease) bool { return r.ZPages != ZPagesNone })

func firstKube(match func(KubeRelease) bool) int {
	for _, r := range KubeReleases {
		if match(r) {
			return r.Minor
		}
	}
	panic("spec: no Kubernetes release matches") // a table error
}

// ServesZPages: the components serve z-pages on this version.
func (v KubeVersion) ServesZPages() bool { return v.Kube().ZPages != ZPagesNone }

// ZPagesByDefault: the z-page gates are on by default on this version.
func (v KubeVersion) ZPagesByDefault() bool { return v.Kube().ZPages == ZPagesBeta }

// ZPageGatesNeeded reports whether the ComponentStatusz/ComponentFlagz gates
// must be set explicitly on this version.
func (v KubeVersion) ZPageGatesNeeded() bool { return v.Kube().ZPages == ZPagesAlpha }

// SupportedVersionsTable is the Markdown table of docs/reference.md
// "Supported versions" (a test keeps the document equal to it).
func SupportedVersionsTable() string {
	s := "| EKS Anywhere | Kubernetes | KubeadmControlPlane | CloudStack | source |\n|---|---|---|---|---|\n"
	for _, r := range EKSAReleases {
		src := r.Source
		if r.Unconfirmed != "" {
			src += "; not confirmed: " + r.Unconfirmed
		}
		cs := "no"
		if r.CloudStack {
			cs = "yes"
		}
		s += fmt.Sprintf("| v0.%d | 1.%d to 1.%d | %s | %s | %s |\n", r.Minor, r.KubeMin, r.KubeMax, r.Contract, cs, src)
	}
	s += "\n| Kubernetes | z-pages | structured /statusz | native histograms by default | source |\n|---|---|---|---|---|\n"
	for _, r := range KubeReleases {
		st, nh := r.Statusz, "no"
		if st == "" {
			st = "text only"
			if r.ZPages == ZPagesNone {
				st = "none"
			}
		}
		if r.NativeHistograms {
			nh = "yes"
		}
		s += fmt.Sprintf("| 1.%d | %s | %s | %s | %s |\n", r.Minor, r.ZPages, st, nh, r.Source)
	}
	return s
}
