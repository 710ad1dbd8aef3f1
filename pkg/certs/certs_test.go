package certs

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"
)

func TestIssueAndRenewal(t *testing.T) {
	ca, err := NewCA("eksa-metrics-serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	const name = "eksa-metrics-etcd.kube-system.svc"
	s, err := Issue(ca, name, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(s.Cert, s.Key); err != nil {
		t.Fatalf("not a serving pair: %v", err)
	}
	if why := Renewal(s, ca, name, now); why != "" {
		t.Errorf("a fresh certificate needs renewal: %s", why)
	}
	if leaf, _ := tls.X509KeyPair(s.Cert, s.Key); leaf.Leaf == nil || !leaf.Leaf.NotAfter.Equal(now.Add(ServingLifetime)) {
		t.Errorf("validity: %+v", leaf.Leaf)
	}
	other, _ := NewCA("someone-else")
	for _, c := range []struct {
		serving Pair
		ca      Pair
		name    string
		at      time.Time
		want    string
	}{
		{s, ca, name, now.Add(240 * 24 * time.Hour), ""},
		{s, ca, name, now.Add(250 * 24 * time.Hour), "expires on " + now.Add(ServingLifetime).Format(time.DateOnly)},
		{s, ca, "eksa-metrics-kube-proxy.kube-system.svc", now, "names [" + name + "]"},
		{s, other, name, now, "does not verify against the CA"},
		{Pair{Cert: []byte("x"), Key: s.Key}, ca, name, now, "does not parse"},
	} {
		if got := Renewal(c.serving, c.ca, c.name, c.at); c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("Renewal at %s for %s: %q, want %q", c.at.Format(time.DateOnly), c.name, got, c.want)
		}
	}
	if _, err := Issue(s, name, now); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("a serving certificate signed others: %v", err)
	}
	if err := CheckCA(ca); err != nil {
		t.Errorf("the CA: %v", err)
	}
	if err := CheckCA(Pair{Cert: ca.Cert, Key: other.Key}); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Errorf("a CA with another CA's key: %v", err)
	}
}
