// Package image builds the eksa-metrics image from a static binary, without a
// container daemon and without a base image: one layer with the binary, the
// non-root user's /etc/passwd and /etc/group, the Mozilla root certificates
// Go's x509roots bundle carries, and /tmp. Every timestamp is the Unix epoch
// and every entry is written in one order, so the same binary gives the same
// digest on any machine.
package image

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

const (
	// Entrypoint is the binary's path in the image.
	Entrypoint = "/eksa-metrics"
	// User is the non-root user and group the image runs as (distroless'
	// "nonroot", which Kubernetes' runAsNonRoot accepts: it is numeric).
	User = "65532:65532"
	// CACertificates is where Go (and most TLS clients) look for roots on Linux.
	CACertificates = "/etc/ssl/certs/ca-certificates.crt"
)

// Options of one image.
type Options struct {
	// Binary is the path of a static linux binary of eksa-metrics.
	Binary string
	// Arch is its GOARCH (amd64, arm64).
	Arch string
	// Version and Revision label the image (org.opencontainers.image.*).
	Version, Revision string
}

// Build makes the image.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	layerTar, err := filesystem(bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.Arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.User = User
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.Cmd = nil
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/", "SSL_CERT_FILE=" + CACertificates}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "eksa-metrics",
		"org.opencontainers.image.source":   "https://github.com/eksa-metrics/eksa-metrics",
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	cf.History = nil
	return mutate.ConfigFile(img, cf)
}

// WriteArchive writes the image as a tarball that docker load, crane push
// and skopeo (docker-archive:) accept, tagged ref.
func WriteArchive(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w (want registry/repository:tag)", ref, err)
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// filesystem is the layer's tar: directories first, then files, in a fixed
// order, owned by root except the user's home, every time the epoch.
func filesystem(bin []byte) ([]byte, error) {
	var certs bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue // a distrust-after date a PEM file cannot carry
		}
		if err := pem.Encode(&certs, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
	}
	type entry struct {
		name     string
		mode     int64
		uid      int
		dir      bool
		contents []byte
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "eksa-metrics", mode: 0o755, contents: bin},
		{name: "etc/group", mode: 0o644, contents: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, contents: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, contents: certs.Bytes()},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: epoch, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.contents))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.contents); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Check says what keeps an image from being the one Build makes for a
// restricted pod: the user, the entrypoint alone, the binary, the roots,
// and no shell. It reads the image's flattened filesystem.
func Check(img v1.Image) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	var problems []string
	if cf.Config.User != User || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != Entrypoint || len(cf.Config.Cmd) > 0 {
		problems = append(problems, fmt.Sprintf("config: user %q, entrypoint %q, cmd %q (want %s, [%s], none)", cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd, User, Entrypoint))
	}
	files := map[string]*tar.Header{}
	var roots []byte
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = h
		if "/"+h.Name == CACertificates {
			if roots, err = io.ReadAll(tr); err != nil {
				return err
			}
		}
	}
	for _, shell := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/env"} {
		if files[shell] != nil {
			problems = append(problems, "it has "+shell)
		}
	}
	if h := files[Entrypoint]; h == nil || h.Mode != 0o755 || h.Uid != 0 {
		problems = append(problems, Entrypoint+" is missing, or not root's and mode 0755")
	}
	if h := files["/home/nonroot"]; h == nil || h.Uid != 65532 {
		problems = append(problems, "no home owned by 65532")
	}
	if n := countCertificates(roots); n < 100 {
		problems = append(problems, fmt.Sprintf("%s holds %d certificates", CACertificates, n))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func countCertificates(b []byte) int {
	n := 0
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return n
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err == nil {
			n++
		}
	}
}
