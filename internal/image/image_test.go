package image

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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
	if err := Check(img); err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" || cf.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" || cf.Created.Unix() != 0 {
		t.Errorf("config: %+v", cf)
	}
	// Check can fail: a shell added on top.
	shell, err := mutate.Append(img, mutate.Addendum{Layer: layerWith(t, "bin/sh")})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(shell); err == nil || !strings.Contains(err.Error(), "it has /bin/sh") {
		t.Errorf("an image with a shell: %v", err)
	}
	if err := WriteArchive(filepath.Join(dir, "bad.tar"), "Not A Reference", img); err == nil {
		t.Error("an invalid reference was accepted")
	}
}

func layerWith(t *testing.T, name string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return l
}
