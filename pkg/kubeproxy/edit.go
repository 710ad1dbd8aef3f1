// Package kubeproxy edits the KubeProxyConfiguration that kubeadm stores in
// the ConfigMap kube-system/kube-proxy (key config.conf). Server-side apply
// cannot change one field inside that string, so the edit is textual: only
// the metricsBindAddress line changes and every other byte is kept.
package kubeproxy

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"

	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// ConfigMap coordinates, as kubeadm writes them.
const (
	Namespace = "kube-system"
	Name      = "kube-proxy"
	Key       = "config.conf"
)

// metricsLine matches a top-level metricsBindAddress line (no indentation).
var metricsLine = regexp.MustCompile(`(?m)^metricsBindAddress:[^\n]*$`)

// Parse decodes config.conf strictly as a KubeProxyConfiguration.
func Parse(conf []byte) (*kubeproxyv1alpha1.KubeProxyConfiguration, error) {
	var cfg kubeproxyv1alpha1.KubeProxyConfiguration
	if err := yaml.UnmarshalStrict(conf, &cfg); err != nil {
		return nil, fmt.Errorf("%s is not a KubeProxyConfiguration: %w", Key, err)
	}
	if cfg.Kind != "KubeProxyConfiguration" {
		return nil, fmt.Errorf("%s has kind %q, want KubeProxyConfiguration", Key, cfg.Kind)
	}
	return &cfg, nil
}

// SetMetricsBindAddress returns conf with metricsBindAddress set to addr,
// and whether anything changed. The line is replaced where it is, or added
// after the kind line; nothing else changes.
func SetMetricsBindAddress(conf []byte, addr string) ([]byte, bool, error) {
	cfg, err := Parse(conf)
	if err != nil {
		return nil, false, err
	}
	if cfg.MetricsBindAddress == addr {
		return conf, false, nil
	}
	line := []byte("metricsBindAddress: " + strconv.Quote(addr))
	var out []byte
	switch n := len(metricsLine.FindAllIndex(conf, -1)); {
	case n == 1:
		out = metricsLine.ReplaceAllLiteral(conf, line)
	case n > 1:
		return nil, false, fmt.Errorf("%s sets metricsBindAddress %d times", Key, n)
	default:
		kind := regexp.MustCompile(`(?m)^kind:[^\n]*\n`).FindIndex(conf)
		if kind == nil {
			return nil, false, fmt.Errorf("%s has no top-level kind line to add metricsBindAddress after", Key)
		}
		out = append(append(append(append([]byte{}, conf[:kind[1]]...), line...), '\n'), conf[kind[1]:]...)
	}
	after, err := Parse(out)
	if err != nil || after.MetricsBindAddress != addr {
		return nil, false, fmt.Errorf("editing %s did not give metricsBindAddress %q (the file's layout is unusual; edit it by hand): %v", Key, addr, err)
	}
	if !bytes.Equal(normalizeExcept(cfg), normalizeExcept(after)) {
		return nil, false, fmt.Errorf("editing %s changed more than metricsBindAddress; edit it by hand", Key)
	}
	return out, true, nil
}

// normalizeExcept encodes a configuration with metricsBindAddress cleared, to
// prove that nothing else changed.
func normalizeExcept(cfg *kubeproxyv1alpha1.KubeProxyConfiguration) []byte {
	c := *cfg
	c.MetricsBindAddress = ""
	b, _ := yaml.Marshal(&c)
	return b
}
