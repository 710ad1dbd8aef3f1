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

// RecordAnnotation, on the kube-proxy ConfigMap, records the edit
// eksa-metrics made to config.conf (a JSON Record), so that a later apply
// that no longer wants it gives the file back as it was.
const RecordAnnotation = "metrics.anywhere.eks.amazonaws.com/kube-proxy-edit"

// Record is what eksa-metrics set and what was there before.
type Record struct {
	// Set is the metricsBindAddress eksa-metrics wrote.
	Set string `json:"set"`
	// Line is config.conf's metricsBindAddress line before, byte for byte
	// ("" when it had none: kubeadm writes one, other tools may not).
	Line string `json:"line,omitempty"`
}

// LegacyRecord stands for an edit made before eksa-metrics recorded its
// edits: config.conf last written by eksa-metrics with the address
// bindAddress mode sets, over kubeadm's line.
var LegacyRecord = Record{Set: "0.0.0.0:10249", Line: `metricsBindAddress: ""`}

// Reconcile returns config.conf as a fresh apply that wants addr (nil: no
// edit) would leave it, and the record to keep (nil: none). A record whose
// value is no longer in place (someone set another since) is dropped and
// that value left alone; otherwise the recorded edit is first given back,
// then addr set, so that the result does not depend on what was applied
// before.
func Reconcile(conf []byte, rec *Record, addr *string) ([]byte, *Record, error) {
	cfg, err := Parse(conf)
	if err != nil {
		return nil, nil, err
	}
	base := conf
	if rec != nil && cfg.MetricsBindAddress == rec.Set {
		if base, err = restoreLine(conf, rec.Line); err != nil {
			return nil, nil, err
		}
		if after, err := Parse(base); err != nil || !bytes.Equal(normalizeExcept(cfg), normalizeExcept(after)) {
			return nil, nil, fmt.Errorf("giving back %s's metricsBindAddress line %q changed more than that field; edit it by hand (and remove the annotation %s): %v", Key, rec.Line, RecordAnnotation, err)
		}
	}
	if addr == nil {
		return base, nil, nil
	}
	out, changed, err := SetMetricsBindAddress(base, *addr)
	if err != nil || !changed {
		return out, nil, err // already so without eksa-metrics: nothing to give back later
	}
	return out, &Record{Set: *addr, Line: string(metricsLine.Find(base))}, nil
}

// restoreLine puts the recorded metricsBindAddress line back where the
// current one stands, or drops the current one when there was none.
func restoreLine(conf []byte, line string) ([]byte, error) {
	locs := metricsLine.FindAllIndex(conf, -1)
	if len(locs) != 1 {
		return nil, fmt.Errorf("%s sets metricsBindAddress %d times; edit it by hand", Key, len(locs))
	}
	start, end := locs[0][0], locs[0][1]
	if line == "" && end < len(conf) && conf[end] == '\n' {
		end++
	}
	return append(append(append([]byte{}, conf[:start]...), line...), conf[end:]...), nil
}
