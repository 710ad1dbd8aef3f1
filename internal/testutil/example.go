package testutil

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

var (
	scrapeConfigBlock = regexp.MustCompile(`(?m)^  scrapeConfig:\n(?:    .*\n)+`)
	tlsBlock          = regexp.MustCompile(`(?m)^  tls:\n(?:    .*\n)+`)
)

// ManagementExample returns a function that gives the text of
// examples/vsphere-management.yaml with its scrapeConfig and tls sections
// replaced (each indented by four spaces under its key).
func ManagementExample(t testing.TB) func(scrapeConfig, tls string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "examples", "vsphere-management.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := string(raw)
	if !scrapeConfigBlock.MatchString(base) || !tlsBlock.MatchString(base) {
		t.Fatal("the example has no scrapeConfig or tls section")
	}
	return func(scrapeConfig, tls string) string {
		text := scrapeConfigBlock.ReplaceAllLiteralString(base, "  scrapeConfig:\n"+scrapeConfig)
		return tlsBlock.ReplaceAllLiteralString(text, "  tls:\n"+tls)
	}
}
