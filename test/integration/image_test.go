package integration

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/eksa-metrics/eksa-metrics/internal/image"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The archive make image writes: loaded as docker load and crane push read
// it, its filesystem unpacked, and the binary run from it as the image's
// user with that filesystem as its root (nothing from this machine: no
// shell, no libc), as a container runtime would.
func TestImageRunsItsBinaryAsItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running the image's binary in its own root needs root (chroot), as the test bed's network namespaces do")
	}
	img, err := tarball.ImageFromPath(framework.Binary(t, "eksa-metrics-image.tar"), nil)
	if err != nil {
		t.Fatalf("make image wrote an archive that does not load: %v", err)
	}
	if err := image.Check(img); err != nil {
		t.Fatalf("make image: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(mutate.Extract(img))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		p := filepath.Join(root, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, os.FileMode(h.Mode).Perm()|os.FileMode(h.Mode)&os.ModeSticky)
		case tar.TypeReg:
			var f *os.File
			if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, os.FileMode(h.Mode).Perm()); err == nil {
				_, err = io.Copy(f, tr)
				err = errors.Join(err, f.Close())
			}
		default:
			t.Fatalf("unexpected entry %s (type %c)", h.Name, h.Typeflag)
		}
		if err == nil {
			err = os.Lchown(p, h.Uid, h.Gid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("image filesystem: %s", strings.Join(names, " "))

	cmd := exec.Command(image.Entrypoint, "version", "-o", "json")
	cmd.Dir = "/"
	cmd.Env = cf.Config.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the image's binary does not run in the image's root as %s: %v (%s)", image.User, err, errText(err))
	}
	var v struct{ Version string }
	if err := json.Unmarshal(out, &v); err != nil || v.Version == "" || v.Version != cf.Config.Labels["org.opencontainers.image.version"] {
		t.Fatalf("version %q (%v), image label %q", out, err, cf.Config.Labels["org.opencontainers.image.version"])
	}
}

func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
