package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/eksa-metrics/eksa-metrics/config"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Version is set at link time (-ldflags -X .../internal/cli.Version=v0.1.0).
var Version = "dev"

// Commit may be set at link time too (-X .../internal/cli.Commit=abc123);
// without it, the VCS revision Go stamps into the binary is shown.
var Commit = ""

// releaseVersion is the form of a release build's Version, a release tag:
// v1.2.3, or a pre-release such as v1.2.3-rc.1. What git describe gives
// between tags (v1.2.3-4-gabcdef0, -dirty) is not a release.
var releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-(alpha|beta|rc)\.?[0-9]*)?$`)

// buildVersion is the version of this build: Version when it was linked in
// (make build, a release), else the module version Go records for
// `go install github.com/eksa-metrics/eksa-metrics/cmd/eksa-metrics@vX.Y.Z`
// (and @latest, which resolves to the newest tag), else "dev".
func buildVersion() string {
	return versionOf(Version, readBuildInfo)
}

var readBuildInfo = debug.ReadBuildInfo

func versionOf(linked string, read func() (*debug.BuildInfo, bool)) string {
	if linked != "dev" && linked != "" {
		return linked
	}
	if info, ok := read(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// defaultControllerImage is the image `controller manifests` installs without
// --image, and the default of images.eksaMetrics: for a release build, and
// for `go install ...@<release tag>` (or @latest), the image of that same
// release (config.ImageRepository tagged with the version); "" for any other
// build (dev, a commit, a pseudo-version), which has no published image.
func defaultControllerImage() string {
	v := buildVersion()
	if !releaseVersion.MatchString(v) {
		return ""
	}
	return config.ImageRepository + ":" + v
}

// noImage is what version says and controller manifests refuses with when
// the build has no published image.
func noImage() string {
	return fmt.Sprintf("this eksa-metrics (%s) is not a release build, so no published image matches it: build one with make image (bin/eksa-metrics-image.tar; docker load, crane push or skopeo copy docker-archive:), push it and pass --image <registry>/eksa-metrics:<tag>@sha256:<digest>", buildVersion())
}

// versionInfo is what `version` prints; its JSON form is a stable schema.
type versionInfo struct {
	Version         string    `json:"version"`
	Commit          string    `json:"commit"`
	GoVersion       string    `json:"goVersion"`
	Kubernetes      kubeRange `json:"kubernetes"`
	EKSAnywhere     eksaRange `json:"eksAnywhere"`
	ControllerImage string    `json:"controllerImage"`
}

type kubeRange struct {
	Min string `json:"min"`
	Max string `json:"max"`
}

// eksaRange: releases from Min on; v0.24 and older render KubeadmControlPlane
// v1beta1, V1beta2From and later v1beta2 (spec.EKSARange).
type eksaRange struct {
	Min         string `json:"min"`
	V1beta2From string `json:"v1beta2From"`
}

func currentVersion() versionInfo {
	return versionInfo{
		Version:         buildVersion(),
		Commit:          commit(),
		GoVersion:       runtime.Version(),
		Kubernetes:      kubeRange{Min: spec.MinKube.String(), Max: spec.MaxKube.String()},
		EKSAnywhere:     eksaRange{Min: spec.MinEKSA.String(), V1beta2From: spec.EKSAv1beta2.String()},
		ControllerImage: defaultControllerImage(),
	}
}

// commit is Commit, else the VCS revision of the build (with -dirty for a
// modified tree), else "unknown".
func commit() string {
	if Commit != "" {
		return Commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// NewCmdVersion prints the version, the commit, the Go version, what it
// supports and the controller image it installs.
func NewCmdVersion(f *Factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o text|json]",
		Short: "Print the eksa-metrics version and the Kubernetes and EKS Anywhere versions it supports",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := currentVersion()
			out := f.IOStreams.Out
			switch output {
			case "json":
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", b)
				return err
			case "text":
				img := v.ControllerImage
				if img == "" {
					img = "none: " + noImage()
				}
				_, err := fmt.Fprintf(out, "eksa-metrics %s\ncommit: %s\ngo: %s\nkubernetes: %s to %s\neks anywhere: %s and later (KubeadmControlPlane v1beta1 before %s, v1beta2 from %s)\ncontroller image: %s\n",
					v.Version, v.Commit, v.GoVersion, v.Kubernetes.Min, v.Kubernetes.Max, v.EKSAnywhere.Min, v.EKSAnywhere.V1beta2From, v.EKSAnywhere.V1beta2From, img)
				return err
			}
			return usageErrorf("-o %q is not one of text, json", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
