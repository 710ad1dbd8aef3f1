package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// The tables are whole: releases and minors in order without gaps, each
// release's range inside the supported minors and moving forward, the
// contract changing once, every supported minor shipped by some release.
func TestReleaseTablesAreConsistent(t *testing.T) {
	for i, r := range EKSAReleases {
		if r.KubeMin > r.KubeMax || r.KubeMin < MinKube.Minor || r.KubeMax > MaxKube.Minor {
			t.Errorf("v0.%d: Kubernetes 1.%d to 1.%d is outside 1.%d to 1.%d", r.Minor, r.KubeMin, r.KubeMax, MinKube.Minor, MaxKube.Minor)
		}
		if r.Contract != CAPIv1beta1 && r.Contract != CAPIv1beta2 || r.Source == "" {
			t.Errorf("v0.%d: contract %q, source %q", r.Minor, r.Contract, r.Source)
		}
		if i == 0 {
			continue
		}
		p := EKSAReleases[i-1]
		if r.Minor != p.Minor+1 || r.KubeMin < p.KubeMin || r.KubeMax < p.KubeMax ||
			p.Contract == CAPIv1beta2 && r.Contract == CAPIv1beta1 || r.CloudStack && !p.CloudStack {
			t.Errorf("v0.%d does not follow v0.%d: %+v after %+v", r.Minor, p.Minor, r, p)
		}
	}
	for i, k := range KubeReleases {
		if i > 0 && (k.Minor != KubeReleases[i-1].Minor+1 || k.ZPages < KubeReleases[i-1].ZPages) {
			t.Errorf("1.%d does not follow 1.%d", k.Minor, KubeReleases[i-1].Minor)
		}
		if k.ZPages == ZPagesNone && k.Statusz != "" || k.Source == "" {
			t.Errorf("1.%d: %+v", k.Minor, k)
		}
		if v := FirstEKSAFor(k.Minor); !(KubeVersion{1, k.Minor}).inRange(v) {
			t.Errorf("no EKS Anywhere release ships Kubernetes 1.%d", k.Minor)
		}
	}
	if got := EKSAReleases[len(EKSAReleases)-1].KubeMax; got != MaxKube.Minor {
		t.Errorf("the newest release supports up to 1.%d, the table up to %s", got, MaxKube)
	}
	for v, want := range map[string][2]int{"v0.20.0": {28, 30}, "v0.24.6": {28, 34}, "v0.25.0": {29, 35}, "v0.26.1": {30, 36}, "v0.27.0": {30, 37}, "v0.30.0": {30, 37}} {
		e, _ := ParseEKSAVersion(v)
		if lo, hi := e.KubeRange(); lo != want[0] || hi != want[1] {
			t.Errorf("%s: 1.%d to 1.%d, want 1.%d to 1.%d", v, lo, hi, want[0], want[1])
		}
	}
	if EKSAv1beta2 != (EKSAVersion{0, 25, 0}) || EKSACloudStackRemoved != (EKSAVersion{0, 26, 0}) || FirstEKSAFor(37) != (EKSAVersion{0, 27, 0}) {
		t.Errorf("v1beta2 from %s, CloudStack gone in %s, 1.37 from %s", EKSAv1beta2, EKSACloudStackRemoved, FirstEKSAFor(37))
	}
	for minor, want := range map[int][3]bool{32: {false, false, false}, 34: {true, true, false}, 36: {true, false, true}, 37: {true, false, true}} {
		v := KubeVersion{1, minor}
		if got := [3]bool{v.ServesZPages(), v.ZPageGatesNeeded(), v.ZPagesByDefault()}; got != want {
			t.Errorf("1.%d: serves z-pages, gates needed, by default = %v, want %v", minor, got, want)
		}
	}
}

func (v KubeVersion) inRange(e EKSAVersion) bool {
	lo, hi := e.KubeRange()
	return lo <= v.Minor && v.Minor <= hi
}

const (
	versionsStart = "<!-- supported versions: generated from pkg/spec/releases.go by `make update-golden` -->\n"
	versionsEnd   = "<!-- end of supported versions -->\n"
)

// docs/reference.md shows the tables as they are.
func TestSupportedVersionsGolden(t *testing.T) {
	path := filepath.Join(testutil.RepoRoot(), "docs", "reference.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start, end := strings.Index(doc, versionsStart), strings.Index(doc, versionsEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no supported-versions markers", path)
	}
	testutil.Golden(t, path, []byte(doc[:start+len(versionsStart)]+SupportedVersionsTable()+doc[end:]))
}
