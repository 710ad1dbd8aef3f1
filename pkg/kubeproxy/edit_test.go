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

// Reconcile is history independent: from any state a fresh apply could
// leave, wanting addr gives what a fresh apply of addr gives, and wanting
// nothing gives the file back byte for byte.
func TestReconcileGivesTheEditBack(t *testing.T) {
	bind, other := "0.0.0.0:10249", "0.0.0.0:10250"
	noLine := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs # kept\n"
	unquoted := strings.Replace(kubeadmConf, `metricsBindAddress: ""`, `metricsBindAddress: 127.0.0.1:10249 # kubeadm's default`, 1)
	for name, orig := range map[string]string{"kubeadm": kubeadmConf, "no line": noLine, "unquoted": unquoted} {
		t.Run(name, func(t *testing.T) {
			for _, first := range []*string{nil, &bind, &other} {
				for _, then := range []*string{nil, &bind, &other} {
					conf, rec, err := Reconcile([]byte(orig), nil, first)
					if err != nil {
						t.Fatal(err)
					}
					got, gotRec, err := Reconcile(conf, rec, then)
					if err != nil {
						t.Fatal(err)
					}
					want, wantRec, _ := Reconcile([]byte(orig), nil, then)
					if string(got) != string(want) || (gotRec == nil) != (wantRec == nil) || gotRec != nil && *gotRec != *wantRec {
						t.Errorf("%v then %v:\n%s\nrecord %+v; a fresh apply gives:\n%s\nrecord %+v", deref(first), deref(then), got, gotRec, want, wantRec)
					}
					if then == nil && string(got) != orig {
						t.Errorf("%v then nothing did not give the file back:\n%s", deref(first), got)
					}
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

// A value someone set after eksa-metrics' edit is theirs: the record is
// dropped and the value stays.
func TestReconcileLeavesAnotherValue(t *testing.T) {
	bind := "0.0.0.0:10249"
	conf, rec, _ := Reconcile([]byte(kubeadmConf), nil, &bind)
	theirs, _, _ := SetMetricsBindAddress(conf, "10.0.0.1:10249")
	got, gotRec, err := Reconcile(theirs, rec, nil)
	if err != nil || gotRec != nil || string(got) != string(theirs) {
		t.Fatalf("err=%v record=%+v:\n%s", err, gotRec, got)
	}
	// A forged record that would change another field is refused.
	if _, _, err := Reconcile(conf, &Record{Set: bind, Line: "metricsBindAddress: \"\"\nmode: ipvs"}, nil); err == nil {
		t.Fatal("a record that changes more than metricsBindAddress was accepted")
	}
}
