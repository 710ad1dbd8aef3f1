// Command image builds the eksa-metrics image from a static binary into a
// tarball that docker load, crane push and skopeo (docker-archive:) accept,
// and prints its digest (`make image`). No container daemon, no base image.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/eksa-metrics/eksa-metrics/config"
	"github.com/eksa-metrics/eksa-metrics/internal/image"
)

func main() {
	var o image.Options
	var tag, out string
	flag.StringVar(&o.Binary, "binary", "", "the static linux binary of eksa-metrics")
	flag.StringVar(&o.Arch, "arch", "amd64", "its GOARCH")
	flag.StringVar(&o.Version, "version", "dev", "the version label")
	flag.StringVar(&o.Revision, "revision", "unknown", "the git revision label")
	flag.StringVar(&tag, "tag", "", "the reference the archive names (registry/repository:tag; default: "+config.ImageRepository+":<version>)")
	flag.StringVar(&out, "o", "", "the archive to write")
	flag.Parse()
	if o.Binary == "" || out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: image -binary FILE -o ARCHIVE [-tag REGISTRY/REPOSITORY:TAG] [-arch A] [-version V] [-revision R]")
		os.Exit(2)
	}
	if tag == "" {
		tag = config.ImageRepository + ":" + o.Version
	}
	img, err := image.Build(o)
	if err == nil {
		err = image.WriteArchive(out, tag, img)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	d, err := img.Digest()
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s@%s\n", out, tag, d)
}
