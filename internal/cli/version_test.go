package cli

import (
	"encoding/json"
	"runtime"
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
