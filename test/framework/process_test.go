package framework

import (
	"strings"
	"testing"
)

func TestPhaseCheck(t *testing.T) {
	files := manifestFiles("etcd\nk8s/v1.37.2/kube-apiserver\n\ncrds/cluster-api/kcp.yaml\n  eksa-metrics-image.tar \n")
	for _, rel := range []string{"etcd", "k8s/v1.37.2/kube-apiserver", "crds/cluster-api", "crds/cluster-api/kcp.yaml", "eksa-metrics-image.tar", "./etcd"} {
		if err := phaseCheck(files, rel, "bin/.testbed-integration"); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
	for _, rel := range []string{"k8s/v1.34.4/kube-apiserver", "k8s/v1.37", "crds/cluster", "otelcol", "crds/prometheus-operator"} {
		err := phaseCheck(files, rel, "bin/.testbed-integration")
		if err == nil {
			t.Errorf("%s: accepted, but the manifest does not list it", rel)
			continue
		}
		if !strings.Contains(err.Error(), rel) || !strings.Contains(err.Error(), "test/e2e") {
			t.Errorf("%s: the error does not name the file and the way out: %v", rel, err)
		}
	}
}
