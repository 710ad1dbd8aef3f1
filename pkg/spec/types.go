// Package spec turns an EKS Anywhere cluster and its metrics section into
// the resolved configuration renderers read: defaults, then validation with
// field paths, on typed objects (Input). The cluster file is one adapter
// (Load, File): strict YAML with file:line errors; the controller builds the
// Input from API objects.
package spec

const eksaAPIVersion = "anywhere.eks.amazonaws.com/v1alpha1"
