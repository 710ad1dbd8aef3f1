package cli

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/config"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

func TestVersionShowsSupport(t *testing.T) {
	code, stdout, _ := run(t, "", "version")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{"eksa-metrics " + Version + "\n", "commit: ", "go: " + runtime.Version(),
		"kubernetes: " + spec.MinKube.String() + " to " + spec.MaxKube.String(),
		"eks anywhere: " + spec.MinEKSA.String() + " and later", "v1beta2 from " + spec.EKSAv1beta2.String(),
		"controller image: "} {
		if !strings.Contains(stdout, w) {
			t.Errorf("version:\n%s\nwant %q", stdout, w)
		}
	}

	code, stdout, _ = run(t, "", "version", "-o", "json")
	if code != ExitOK {
		t.Fatalf("-o json: exit %d", code)
	}
	var got versionInfo
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, stdout)
	}
	if got != currentVersion() || got.Kubernetes.Max != spec.MaxKube.String() || got.EKSAnywhere.Min != "v0.20.0" || got.GoVersion != runtime.Version() || got.Commit == "" {
		t.Errorf("-o json: %+v", got)
	}
	if code, _, _ := run(t, "", "version", "-o", "yaml"); code != ExitUsage {
		t.Errorf("-o yaml: exit %d, want %d", code, ExitUsage)
	}
}

// A release build installs its own release's controller image; any other
// build has none, and controller manifests requires --image. controller
// manifests and version agree.
func TestControllerImageFollowsRelease(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	for version, want := range map[string]string{
		"dev":                     "",
		"v0.1.0-3-g1234567-dirty": "", // git describe between tags: not a release
		"v0.1.0-3-g1234567":       "",
		"v9.8.7":                  config.ImageRepository + ":v9.8.7",
		"v9.8.7-rc.1":             config.ImageRepository + ":v9.8.7-rc.1",
		"1234abcd":                "",
	} {
		Version = version
		if got := defaultControllerImage(); got != want {
			t.Errorf("Version %q: image %q, want %q", version, got, want)
		}
		code, stdout, stderr := run(t, "", "controller", "manifests")
		_, vout, _ := run(t, "", "version")
		if want == "" {
			if code != ExitUsage || !strings.Contains(stderr, "--image is required") || !strings.Contains(stderr, "make image") {
				t.Errorf("Version %q: controller manifests without --image: exit %d, %s", version, code, stderr)
			}
			if !strings.Contains(vout, "controller image: none: ") {
				t.Errorf("Version %q: version says\n%s", version, vout)
			}
			continue
		}
		if !strings.Contains(stdout, "image: "+want+"\n") {
			t.Errorf("Version %q: controller manifests does not install %s", version, want)
		}
		if !strings.Contains(vout, "controller image: "+want+"\n") {
			t.Errorf("Version %q: version says\n%s", version, vout)
		}
	}
}

// A build's version, and so its default image, is the linked Version, else
// the module version `go install ...@tag` records: one spec gets one
// verdict from a release build and from go install of the same release.
func TestBuildVersionOfEveryBuild(t *testing.T) {
	info := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: "github.com/eksa-metrics/eksa-metrics", Version: v}}, true
		}
	}
	for _, tc := range []struct{ linked, module, want string }{
		{"v0.27.0", "(devel)", "v0.27.0"},
		{"dev", "v0.27.0", "v0.27.0"},
		{"dev", "(devel)", "dev"},
		{"dev", "v0.0.0-20261206120000-abcdef012345", "v0.0.0-20261206120000-abcdef012345"},
		{"3f4f793-dirty", "v0.27.0", "3f4f793-dirty"},
	} {
		if got := versionOf(tc.linked, info(tc.module)); got != tc.want {
			t.Errorf("linked %q, module %q: %q, want %q", tc.linked, tc.module, got, tc.want)
		}
	}
	old := readBuildInfo
	defer func() { readBuildInfo = old }()
	readBuildInfo = info("v0.27.0")
	if got := defaultControllerImage(); Version == "dev" && got != config.ImageRepository+":v0.27.0" {
		t.Errorf("go install @v0.27.0: default image %q", got)
	}
	readBuildInfo = info("v0.0.0-20261206120000-abcdef012345")
	if got := defaultControllerImage(); Version == "dev" && got != "" {
		t.Errorf("a pseudo-version has a default image: %q", got)
	}
}
