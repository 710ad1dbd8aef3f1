package kubeproxy

import (
	"strings"
	"testing"
)

// What kubeadm writes into config.conf (abridged from a v1.34 cluster).
const kubeadmConf = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
bindAddressHardFail: false
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: 192.168.0.0/16
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
kind: KubeProxyConfiguration
metricsBindAddress: ""
mode: ""
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForVersion: ""
winkernel:
  enableDSR: false
  networkName: ""
  sourceVip: ""
`

func TestSetMetricsBindAddressKeepsEveryOtherByte(t *testing.T) {
	out, changed, err := SetMetricsBindAddress([]byte(kubeadmConf), "0.0.0.0:10249")
	if err != nil || !changed {
		t.Fatalf("changed=%t err=%v", changed, err)
	}
	want := strings.Replace(kubeadmConf, `metricsBindAddress: ""`, `metricsBindAddress: "0.0.0.0:10249"`, 1)
	if string(out) != want {
		t.Fatalf("got:\n%s", out)
	}
	again, changed, err := SetMetricsBindAddress(out, "0.0.0.0:10249")
	if err != nil || changed || string(again) != string(out) {
		t.Fatalf("second edit: changed=%t err=%v", changed, err)
	}
}

func TestSetMetricsBindAddressAddsTheLine(t *testing.T) {
	in := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs # kept\n"
	out, changed, err := SetMetricsBindAddress([]byte(in), "0.0.0.0:10249")
	if err != nil || !changed {
		t.Fatal(err)
	}
	if want := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmetricsBindAddress: \"0.0.0.0:10249\"\nmode: ipvs # kept\n"; string(out) != want {
		t.Fatalf("got:\n%s", out)
	}
}

func TestSetMetricsBindAddressRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"not YAML":           "kind: [",
		"another kind":       "apiVersion: v1\nkind: ConfigMap\n",
		"unknown field":      "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmetricsBindAdress: x\n",
		"flow style":         "{apiVersion: kubeproxy.config.k8s.io/v1alpha1, kind: KubeProxyConfiguration}\n",
		"duplicated setting": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmetricsBindAddress: a\nmetricsBindAddress: b\n",
	} {
		if _, _, err := SetMetricsBindAddress([]byte(in), "0.0.0.0:10249"); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func FuzzSetMetricsBindAddress(f *testing.F) {
	f.Add(kubeadmConf)
	f.Add("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n")
	f.Fuzz(func(t *testing.T, conf string) {
		out, _, err := SetMetricsBindAddress([]byte(conf), "0.0.0.0:10249")
		if err != nil {
			return
		}
		cfg, err := Parse(out)
		if err != nil || cfg.MetricsBindAddress != "0.0.0.0:10249" {
			t.Fatalf("accepted edit is wrong: %v %+v", err, cfg)
		}
	})
}
