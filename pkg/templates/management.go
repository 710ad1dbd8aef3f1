package templates

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// SidecarName is the container eksa-metrics adds to controllers that serve
// metrics only as plain HTTP.
const SidecarName = "kube-rbac-proxy"

// ManagementComponents returns the catalog rows that apply to the cluster:
// a management cluster with managementComponents on, the rows of its
// provider, minus managementComponents.exclude.
func ManagementComponents(c *spec.Config) []components.Management {
	if !c.ManagementComponents {
		return nil
	}
	var out []components.Management
	for _, m := range components.ManagementCatalog {
		if len(m.Providers) > 0 && !slices.Contains(m.Providers, string(c.Provider)) {
			continue
		}
		if slices.Contains(c.ManagementExclude, m.ID()) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// DeploymentEdit is the change one management Deployment needs. Container
// args are an atomic list for server-side apply, so apply performs the edit
// as a read-modify-write that keeps every other argument and field.
type DeploymentEdit struct {
	Component components.Management
	// SetArgs are "--flag=value" arguments of the component's container; an
	// existing "--flag" or "--flag=..." is replaced where it stands.
	SetArgs []string
	// Port is ensured on the container that serves metrics securely.
	Port corev1.ContainerPort
	// Sidecar is added, or replaces a container of the same name.
	Sidecar *corev1.Container
	// Remove is a container to drop.
	Remove string
}

// ManagementEdits lists the Deployment edits of the management components.
func ManagementEdits(c *spec.Config) []DeploymentEdit {
	var out []DeploymentEdit
	for _, m := range ManagementComponents(c) {
		e := DeploymentEdit{Component: m, Remove: m.DropContainer,
			Port: corev1.ContainerPort{Name: "metrics", ContainerPort: components.MetricsPort, Protocol: corev1.ProtocolTCP}}
		switch m.Family {
		case components.Diagnostics:
			e.SetArgs = []string{fmt.Sprintf("--diagnostics-address=:%d", components.MetricsPort), "--insecure-diagnostics=false", "--tls-min-version=" + c.TLSMinVersion}
		case components.Sidecar:
			e.SetArgs = []string{fmt.Sprintf("%s=127.0.0.1:%d", m.ListenFlag, m.UpstreamPort)}
			e.Sidecar = &corev1.Container{
				Name:  SidecarName,
				Image: c.Images.KubeRBACProxy,
				Args: []string{
					fmt.Sprintf("--secure-listen-address=0.0.0.0:%d", components.MetricsPort),
					fmt.Sprintf("--upstream=http://127.0.0.1:%d/", m.UpstreamPort),
					"--allow-paths=/metrics",
					"--tls-min-version=" + c.TLSMinVersion,
				},
				Ports:           []corev1.ContainerPort{e.Port},
				SecurityContext: hardened(65532),
				Resources:       smallResources(),
			}
		}
		out = append(out, e)
	}
	return out
}

// Name is "Deployment namespace/name".
func (e DeploymentEdit) Name() string {
	return ObjectName("Deployment", e.Component.Namespace, e.Component.Deployment)
}

// Apply edits d in place and reports whether anything changed.
func (e DeploymentEdit) Apply(d *appsv1.Deployment) (bool, error) {
	spec := &d.Spec.Template.Spec
	idx := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == e.Component.Container })
	if idx < 0 {
		return false, fmt.Errorf("%s has no container %q (a changed manifest? exclude it with managementComponents.exclude)", e.Name(), e.Component.Container)
	}
	before := d.DeepCopy()
	main := &spec.Containers[idx]
	for _, a := range e.SetArgs {
		main.Args = setArg(main.Args, a)
	}
	target := main
	if e.Sidecar != nil {
		if i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == e.Sidecar.Name }); i >= 0 {
			spec.Containers[i] = *e.Sidecar.DeepCopy()
		} else {
			spec.Containers = append(spec.Containers, *e.Sidecar.DeepCopy())
		}
		target = nil
	}
	if e.Remove != "" {
		spec.Containers = slices.DeleteFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == e.Remove })
		main = &spec.Containers[slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == e.Component.Container })]
		if target != nil {
			target = main
		}
	}
	if target != nil && !slices.ContainsFunc(target.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == e.Port.ContainerPort }) {
		// Another port named "metrics" (CAPX's 8080 behind its old proxy) gives way.
		target.Ports = slices.DeleteFunc(target.Ports, func(p corev1.ContainerPort) bool { return p.Name == e.Port.Name })
		target.Ports = append(target.Ports, e.Port)
	}
	return !equality.Semantic.DeepEqual(before, d), nil
}

// setArg replaces "--flag", "--flag=..." by arg, where it stands, or appends it.
func setArg(args []string, arg string) []string {
	flag, _, _ := strings.Cut(arg, "=")
	out := make([]string, 0, len(args)+1)
	done := false
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			if !done {
				out = append(out, arg)
				done = true
			}
			continue
		}
		out = append(out, a)
	}
	if !done {
		out = append(out, arg)
	}
	return out
}

// ManagementObjects renders, per management component, a <deployment>-metrics
// Service (https 8443) and the auth-delegator binding its ServiceAccount
// needs: for a kube-rbac-proxy sidecar always, and for eksa-controller-manager
// from EKS-A v0.25 (whose role lost tokenreviews and subjectaccessreviews).
func ManagementObjects(c *spec.Config) []Object {
	var out []Object
	for _, m := range ManagementComponents(c) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: m.Deployment + "-metrics", Namespace: m.Namespace, Labels: labels(map[string]string{ComponentLabel: m.Deployment, JobLabel: m.Deployment})},
			Spec: corev1.ServiceSpec{
				Selector: m.Selector,
				Ports:    []corev1.ServicePort{{Name: "https", Port: components.MetricsPort, TargetPort: intstr.FromInt32(components.MetricsPort), Protocol: corev1.ProtocolTCP}},
			},
		}
		out = append(out, toObject("v1", "Service", svc))
		if needsAuthDelegator(c, m) {
			out = append(out, AuthDelegatorBinding(Prefix+"-"+m.Deployment+":auth-delegator", m.ServiceAccount, m.Namespace))
		}
	}
	return out
}

func needsAuthDelegator(c *spec.Config, m components.Management) bool {
	if m.Family == components.Sidecar {
		return true
	}
	if m.AuthDelegatorFromEKSA == "" || c.EKSAVersion == nil {
		return false
	}
	from, err := spec.ParseEKSAVersion(m.AuthDelegatorFromEKSA)
	return err == nil && !c.EKSAVersion.Less(from)
}
