package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of MetricsConfig.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// SchemeBuilder registers the types; AddToScheme adds them to a scheme.
var (
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	AddToScheme   = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &MetricsConfig{}, &MetricsConfigList{}, &MetricsConfigBinding{}, &MetricsConfigBindingList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
