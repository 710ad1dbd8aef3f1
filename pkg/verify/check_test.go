package verify

import "testing"

// Bodies captured from Kubernetes 1.34 components in the test bed: the text
// form changes its delimiter from one process to the next.
func TestParseStatuszText(t *testing.T) {
	for _, body := range []string{
		"\napiserver statusz\nWarning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.\n\nStarted  Mon Nov 30 04:03:34 UTC 2026\nUp  0 hr 00 min 50 sec\nGo version  go1.26.8\nBinary version  1.34.4\nEmulation version  1.34\nPaths   /flagz /healthz /livez /metrics /readyz /statusz /version\n",
		"\nkube-scheduler statusz\nWarning: This endpoint is not meant to be machine parseable.\n\nStarted= Mon Nov 30 04:03:38 UTC 2026\nUp= 0 hr 00 min 50 sec\nGo version= go1.26.8\nBinary version= 1.34.4\nEmulation version= 1.34\n\n",
		"kube-controller-manager statusz\n\nStarted: Mon Nov 30 04:03:38 UTC 2026\nUp: 0 hr 00 min 50 sec\nGo version: go1.26.8\nBinary version: 1.34.4\nEmulation version: 1.34\n",
	} {
		v, e, up := parseStatusz(body)
		if v != "1.34.4" || e != "1.34" || up != "0 hr 00 min 50 sec" {
			t.Errorf("parseStatusz = %q, %q, %q from:\n%s", v, e, up, body)
		}
	}
}

func TestParseStatuszStructured(t *testing.T) {
	v, e, up := parseStatusz(`{"kind":"Statusz","apiVersion":"config.k8s.io/v1beta1","binaryVersion":"1.36.3","emulationVersion":"1.36","uptimeSeconds":125}`)
	if v != "1.36.3" || e != "1.36" || up != "2m5s" {
		t.Fatalf("got %q %q %q", v, e, up)
	}
}
