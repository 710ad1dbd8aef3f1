package image

import (
	"archive/tar"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The same binary gives the same archive byte for byte, and the image is
// what a restricted pod runs: a numeric non-root user, the binary as its
// entrypoint, no shell, the roots TLS clients read.
func TestImageIsReproducibleAndMinimal(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "eksa-metrics")
	if err := os.WriteFile(bin, []byte("not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var archives [][]byte
	for i := range 2 {
		img, err := Build(Options{Binary: bin, Arch: "arm64", Version: "v1.2.3", Revision: "abc"})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "image.tar")
		if err := WriteArchive(p, "registry.example/eksa-metrics:v1.2.3", img); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, b)
		if i == 1 && string(archives[0]) != string(archives[1]) {
			t.Fatal("two builds of one binary differ")
		}
	}

	img, err := tarball.ImageFromPath(filepath.Join(dir, "image.tar"), nil)
	if err != nil {
		t.Fatalf("the archive does not load: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/eksa-metrics"}) || cf.Config.Cmd != nil ||
		cf.OS != "linux" || cf.Architecture != "arm64" || cf.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" || cf.Created.Unix() != 0 {
		t.Errorf("config: %+v", cf)
	}

	files := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(img))
	var roots []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
		if h.Name == "etc/ssl/certs/ca-certificates.crt" {
			roots, _ = io.ReadAll(tr)
		}
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/env"} {
		if files[shell] != nil {
			t.Errorf("the image has %s", shell)
		}
	}
	if h := files["eksa-metrics"]; h == nil || h.Mode != 0o755 || h.Uid != 0 {
		t.Errorf("the binary: %+v", h)
	}
	if h := files["home/nonroot"]; h == nil || h.Uid != 65532 {
		t.Errorf("the user's home: %+v", h)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(roots) || len(pool.Subjects()) < 100 {
		t.Errorf("%d root certificates", len(pool.Subjects()))
	}
	if err := WriteArchive(filepath.Join(dir, "bad.tar"), "Not A Reference", img); err == nil {
		t.Error("an invalid reference was accepted")
	}
}
