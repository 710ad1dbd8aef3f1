package spec

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
)

// Input is what rendering needs, as typed objects: the EKS Anywhere Cluster,
// its machine configs, and the metrics section. The file adapter (Load) and
// the controller (from API objects) both build one.
type Input struct {
	Cluster        Cluster
	MachineConfigs []MachineConfig
	Metrics        metricsv1alpha1.MetricsConfigSpec
	// MetricsName is the MetricsConfig's name ("" when inline).
	MetricsName string
	// Inline: the section is Cluster.spec.metrics, so its paths start there.
	Inline bool
	// Resource: the section is the MetricsConfig custom resource, which may
	// select Clusters by label and allow a control-plane rollout.
	Resource bool
	// Machines are the Cluster's Cluster API Machines, which the controller
	// reads in the management cluster and publishes to the cluster's kubelet
	// approver (only with tls.kubeletServingCertificates; Resource only).
	Machines []Machine
}

// MetricsRoot is the field path of the metrics section in its document.
func (in *Input) MetricsRoot() *field.Path {
	if in.Inline {
		return field.NewPath("spec", "metrics")
	}
	return field.NewPath("spec")
}

// controlPlaneOS finds the osFamily of the control plane's MachineConfig.
func (in *Input) controlPlaneOS() string {
	return in.machineOS(in.Cluster.Spec.ControlPlaneConfiguration.MachineGroupRef)
}

// Doc says which document an Issue is about.
type Doc int

// The documents of an Input.
const (
	DocMetrics Doc = iota // the MetricsConfig, or the Cluster with an inline section
	DocCluster
)

// Issue is a problem (or, with Warning, something worth saying) at a field
// path of one of the input's documents.
type Issue struct {
	Doc     Doc
	Field   string
	Detail  string
	Warning bool
}

func (i Issue) String() string {
	if i.Field == "" {
		return i.Detail
	}
	return i.Field + ": " + i.Detail
}

// Issues are what validation found.
type Issues []Issue

// Errors are the issues that make the input invalid.
func (is Issues) Errors() Issues {
	var out Issues
	for _, i := range is {
		if !i.Warning {
			out = append(out, i)
		}
	}
	return out
}

// Warnings are the issues that do not.
func (is Issues) Warnings() Issues {
	var out Issues
	for _, i := range is {
		if i.Warning {
			out = append(out, i)
		}
	}
	return out
}

// FieldError is an invalid Input, for callers without a file (the
// controller): every problem with its field path.
type FieldError struct{ Issues Issues }

func (e *FieldError) Error() string {
	lines := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		lines[i] = is.String()
	}
	return strings.Join(lines, "; ")
}
