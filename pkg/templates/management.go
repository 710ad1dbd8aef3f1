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
	"k8s.io/utils/ptr"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// SidecarName is the container eksa-metrics adds to controllers that serve
// metrics only as plain HTTP.
const SidecarName = "kube-rbac-proxy"

// The sidecar's own identity. A pod has one ServiceAccount, and the
// ServiceAccount admission plugin mounts its token into every container that
// has no mount at DefaultAPITokenMountPath of its own (k8s.io/kubernetes
// v1.36.3 plugin/pkg/admission/serviceaccount/admission.go,
// mountServiceAccountToken: "Existing mounts at the default mount path
// prevent mounting of the API token"). A sidecar in cert-manager's pod would
// so hold cert-manager's token, and with it cert-manager's cluster-wide
// rights on Secrets. The sidecar therefore runs as SidecarSA, a ServiceAccount
// of eksa-metrics in each namespace that gets a sidecar, bound to
// system:auth-delegator only (TokenReview and SubjectAccessReview, what
// kube-rbac-proxy does), whose token Secret SidecarTokenSecret is mounted
// into the sidecar alone at that path: the admission plugin then skips the
// sidecar, and the controller's own container keeps its token as shipped.
//
// Why a token Secret: a projected serviceAccountToken source is always the
// token of the pod's own ServiceAccount, and a token that apply would
// request (TokenRequest) for SidecarSA and write into a Secret expires unless
// something renews it. The kubernetes.io/service-account-token Secret is
// the documented long-lived token for a ServiceAccount: kube-controller-manager's
// token controller fills in token, ca.crt and namespace (the three files
// in-cluster configuration reads), deleting the Secret revokes the token
// (apply makes a new one; client-go in kube-rbac-proxy reads the token file
// again), and the legacy-token cleaner leaves it alone, because no
// ServiceAccount lists it in its secrets (k8s.io/kubernetes v1.36.3
// pkg/controller/serviceaccount/legacy_serviceaccount_token_cleaner.go). It
// never expires, which is why its identity can do nothing but review tokens.
const (
	SidecarSA          = Prefix + "-sidecar"
	SidecarTokenSecret = SidecarSA + "-token"
	// SidecarTokenVolume is the pod volume of the token. Not
	// "kube-api-access-...": the admission plugin takes a volume of that
	// prefix for the pod's own token and would mount it everywhere.
	SidecarTokenVolume = SidecarSA + "-token"
	// ServiceAccountDir is where in-cluster configuration (client-go
	// rest.InClusterConfig) reads token, ca.crt and namespace, and where the
	// admission plugin mounts the pod's token (DefaultAPITokenMountPath).
	ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// ManagementComponents returns the catalog rows that apply to the cluster,
// resolved for the EKS Anywhere release it runs: a management cluster with
// managementComponents on, the rows of its provider, minus
// managementComponents.exclude, minus the controllers eksa-metrics cannot
// secure in that release (ManagementWarnings says why).
func ManagementComponents(c *spec.Config) []components.Resolved {
	rows, _ := management(c)
	return rows
}

// ManagementWarnings says what the management components do not get, and
// why: a release whose binary lacks the flags, a spec without eksaVersion
// that spans releases which differ, a TLS minimum a binary cannot enforce.
func ManagementWarnings(c *spec.Config) []string {
	_, warnings := management(c)
	return warnings
}

func management(c *spec.Config) ([]components.Resolved, []string) {
	if !c.ManagementComponents {
		return nil, nil
	}
	lo, hi := c.EKSARange()
	var rows []components.Resolved
	var warnings []string
	if components.NewestChecked.Less(lo) && lo.Minor != components.NewestChecked.Minor {
		warnings = append(warnings, fmt.Sprintf("EKS Anywhere %s is newer than the releases the management catalog was checked against (up to v0.%d): its controllers are assumed to ship as in v0.%d; run eksa-metrics verify after apply",
			lo, components.NewestChecked.Minor, components.NewestChecked.Minor))
	}
	for _, m := range components.ManagementCatalog {
		if len(m.Providers) > 0 && !slices.Contains(m.Providers, string(c.Provider)) {
			continue
		}
		if slices.Contains(c.ManagementExclude, m.ID()) {
			continue
		}
		r, ok, why := m.Resolve(lo, hi)
		switch {
		case !ok:
			warnings = append(warnings, why+"; it is left alone")
			continue
		case r.Method == components.Unsupported:
			warnings = append(warnings, fmt.Sprintf("%s (%s in EKS Anywhere %s): %s", m.ID(), r.Version, lo, r.Note))
			continue
		case r.Note != "":
			warnings = append(warnings, fmt.Sprintf("%s (%s): %s", m.ID(), r.Version, r.Note))
		}
		if r.Unconfirmed != "" {
			warnings = append(warnings, fmt.Sprintf("%s (%s in EKS Anywhere %s) was not confirmed upstream: %s; it is assumed to ship as before, so run eksa-metrics verify after apply", m.ID(), r.Version, lo, r.Unconfirmed))
		}
		if c.TLSMinVersion != metricsv1alpha1.TLS12 && r.TLSFlag == "" && r.Method != components.Sidecar {
			warnings = append(warnings, fmt.Sprintf("%s (%s) has no flag that sets the TLS minimum of its metrics endpoint, which keeps accepting TLS 1.2", m.ID(), r.Version))
		}
		rows = append(rows, r)
	}
	return rows, warnings
}

// DeploymentEdit is the change one management Deployment needs. Container
// args are an atomic list for server-side apply, so apply performs the edit
// as a read-modify-write that keeps every other argument and field, and
// makes no write when the Deployment already is as the edit wants it.
type DeploymentEdit struct {
	Component components.Resolved
	// Container receives SetArgs: the controller's own container, or for a
	// shipped kube-rbac-proxy that container.
	Container string
	// SetArgs are "--flag=value" arguments; an existing "--flag" or
	// "--flag=..." is replaced where it stands.
	SetArgs []string
	// Sidecar is added, or replaces a container of the same name.
	Sidecar *corev1.Container
	// Mounts are added to Container (the controller's own: its serving
	// certificate where its metrics server reads it), each replacing a
	// mount of the same name.
	Mounts []corev1.VolumeMount
	// Volumes (the sidecar's token and serving certificate, mounted into the
	// sidecar only; or the controller's serving certificate, Mounts) are
	// added to the pod, each replacing a volume of the same name.
	Volumes []corev1.Volume
}

// ServingVolume is the pod volume of a management controller's serving
// certificate (mounted into the sidecar, or into the controller's container
// at Release.CertDir).
const ServingVolume = "eksa-metrics-serving"

// ManagementEdits lists the Deployment edits of the management components:
// for shipped secure diagnostics, the diagnostics flags as shipped (so an
// edit is made only where they were changed) and a TLS minimum above the
// default; for a shipped kube-rbac-proxy, only such a TLS minimum; for a
// sidecar, the sidecar and the listener on loopback.
func ManagementEdits(c *spec.Config) []DeploymentEdit {
	var out []DeploymentEdit
	tls := c.TLSMinVersion != metricsv1alpha1.TLS12
	for _, m := range ManagementComponents(c) {
		e := DeploymentEdit{Component: m, Container: m.Container}
		switch m.Method {
		case components.Shipped:
			e.SetArgs = []string{fmt.Sprintf("--diagnostics-address=:%d", components.MetricsPort), "--insecure-diagnostics=false"}
			if m.ShippedArgs != nil {
				e.SetArgs = slices.Clone(m.ShippedArgs)
			}
			if tls && m.TLSFlag != "" {
				e.SetArgs = append(e.SetArgs, m.TLSFlag+"="+c.TLSMinVersion)
			}
			if ServesOurCertificate(c, m) {
				// Read-only, readable by the controller's user whatever its
				// UID; not optional: a pod without it would serve a
				// self-signed certificate that the scrapers refuse, so a new
				// pod waits for the Secret (apply issues it first) while
				// the old one keeps running.
				e.Mounts = []corev1.VolumeMount{{Name: ServingVolume, MountPath: m.CertDir, ReadOnly: true}}
				e.Volumes = []corev1.Volume{managementServingVolume(m)}
			}
		case components.ShippedProxy:
			e.Container = m.ProxyContainer
			if tls {
				e.SetArgs = []string{m.TLSFlag + "=" + c.TLSMinVersion}
			}
			if ServesOurCertificate(c, m) {
				// The shipped kube-rbac-proxy serves the certificate by flag,
				// as eksa-metrics' own sidecar does.
				dir := ServingDir(components.ID(m.Deployment))
				e.SetArgs = append(e.SetArgs, "--tls-cert-file="+dir+"/tls.crt", "--tls-private-key-file="+dir+"/tls.key")
				e.Mounts = []corev1.VolumeMount{{Name: ServingVolume, MountPath: dir, ReadOnly: true}}
				e.Volumes = []corev1.Volume{managementServingVolume(m)}
			}
		case components.Sidecar:
			if m.ListenFlag != "" {
				e.SetArgs = []string{fmt.Sprintf("%s=127.0.0.1:%d", m.ListenFlag, m.UpstreamPort)}
			}
			port := corev1.ContainerPort{Name: "metrics", ContainerPort: components.MetricsPort, Protocol: corev1.ProtocolTCP}
			e.Sidecar = &corev1.Container{
				Name:  SidecarName,
				Image: c.Images.KubeRBACProxy,
				Args: []string{
					fmt.Sprintf("--secure-listen-address=0.0.0.0:%d", components.MetricsPort),
					fmt.Sprintf("--upstream=http://127.0.0.1:%d/", m.UpstreamPort),
					"--allow-paths=/metrics",
					"--tls-min-version=" + c.TLSMinVersion,
				},
				Ports:           []corev1.ContainerPort{port},
				SecurityContext: hardened(65532),
				Resources:       smallResources(),
				// Its own identity, never the pod's ServiceAccount (see SidecarSA).
				VolumeMounts: []corev1.VolumeMount{{Name: SidecarTokenVolume, MountPath: ServiceAccountDir, ReadOnly: true}},
			}
			// Readable by the sidecar's user without changing the pod's
			// fsGroup; optional, so that the controller's pods still start
			// should the Secret be gone (the sidecar then fails alone, and
			// verify says so) instead of waiting for a Secret of eksa-metrics.
			e.Volumes = []corev1.Volume{{Name: SidecarTokenVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: SidecarTokenSecret, DefaultMode: ptr.To[int32](0o444), Optional: ptr.To(true)}}}}
			if c.ServingCertificates {
				dir := ServingDir(components.ID(m.Deployment))
				e.Sidecar.Args = append(e.Sidecar.Args, "--tls-cert-file="+dir+"/tls.crt", "--tls-private-key-file="+dir+"/tls.key")
				e.Sidecar.VolumeMounts = append(e.Sidecar.VolumeMounts, corev1.VolumeMount{Name: ServingVolume, MountPath: dir, ReadOnly: true})
				// Mounted only into the sidecar.
				e.Volumes = append(e.Volumes, managementServingVolume(m))
			}
		}
		out = append(out, e)
	}
	return out
}

// managementServingVolume is the Secret of a management controller's serving
// certificate as a pod volume, readable by the user of the container that
// mounts it without changing the pod's fsGroup.
func managementServingVolume(m components.Resolved) corev1.Volume {
	return corev1.Volume{Name: ServingVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: ServingSecret(components.ID(m.Deployment)), DefaultMode: ptr.To[int32](0o444)}}}
}

// ChangesShipped reports whether the edit changes the Deployment as EKS-A
// ships it: a sidecar, a mounted certificate, or a flag beyond the shipped
// secure-diagnostics ones (which apply only checks).
func (e DeploymentEdit) ChangesShipped() bool {
	switch e.Component.Method {
	case components.Shipped:
		_, set := e.CheckedArgs()
		return len(set) > 0 || len(e.Mounts) > 0
	case components.ShippedProxy:
		return len(e.SetArgs) > 0
	}
	return true
}

// CheckedArgs splits the SetArgs of shipped secure diagnostics into the
// diagnostics arguments as shipped, which apply only checks, and those it
// sets beyond them (the TLS minimum). For other methods every argument is
// set.
func (e DeploymentEdit) CheckedArgs() (checked, set []string) {
	if e.Component.Method != components.Shipped {
		return nil, e.SetArgs
	}
	n := 2 // Cluster API's manifests' pair
	if e.Component.ShippedArgs != nil {
		n = len(e.Component.ShippedArgs)
	}
	n = min(n, len(e.SetArgs))
	return e.SetArgs[:n], e.SetArgs[n:]
}

// Name is "Deployment namespace/name".
func (e DeploymentEdit) Name() string {
	return ObjectName("Deployment", e.Component.Namespace, e.Component.Deployment)
}

// Apply edits d in place and reports whether anything changed.
func (e DeploymentEdit) Apply(d *appsv1.Deployment) (bool, error) {
	spec := &d.Spec.Template.Spec
	idx := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == e.Container })
	if idx < 0 {
		return false, fmt.Errorf("%s has no container %q, which eksa-metrics expects of %s (a changed manifest? exclude it with managementComponents.exclude)", e.Name(), e.Container, e.Component.Version)
	}
	before := d.DeepCopy()
	for _, a := range e.SetArgs {
		spec.Containers[idx].Args = setArg(spec.Containers[idx].Args, a)
	}
	for _, m := range e.Mounts {
		spec.Containers[idx].VolumeMounts = setNamed(spec.Containers[idx].VolumeMounts, m, func(x corev1.VolumeMount) string { return x.Name })
	}
	if e.Sidecar != nil {
		if i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == e.Sidecar.Name }); i >= 0 {
			if !sidecarIs(spec.Containers[i], *e.Sidecar) {
				spec.Containers[i] = *e.Sidecar.DeepCopy()
			}
		} else {
			spec.Containers = append(spec.Containers, *e.Sidecar.DeepCopy())
		}
	}
	for _, v := range e.Volumes {
		spec.Volumes = setNamed(spec.Volumes, *v.DeepCopy(), func(x corev1.Volume) string { return x.Name })
	}
	return !equality.Semantic.DeepEqual(before, d), nil
}

// setNamed replaces the item of list with item's name, or appends item.
func setNamed[T any](list []T, item T, name func(T) string) []T {
	if i := slices.IndexFunc(list, func(x T) bool { return name(x) == name(item) }); i >= 0 {
		list[i] = item
		return list
	}
	return append(list, item)
}

// sidecarIs reports whether a live container already is the sidecar: the
// fields eksa-metrics sets are equal (the API server fills in others, such
// as terminationMessagePath and imagePullPolicy, which must not make every
// apply write again).
func sidecarIs(live, want corev1.Container) bool {
	return live.Image == want.Image && slices.Equal(live.Args, want.Args) && slices.Equal(live.Command, want.Command) &&
		equality.Semantic.DeepEqual(live.Ports, want.Ports) && equality.Semantic.DeepEqual(live.SecurityContext, want.SecurityContext) &&
		equality.Semantic.DeepEqual(live.Resources, want.Resources) && len(live.Env) == 0 && equality.Semantic.DeepEqual(live.VolumeMounts, want.VolumeMounts)
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
// Service (https 8443, selecting the pods by their shipped labels) and, where
// the component serves metrics itself and its ServiceAccount may not review
// tokens, its auth-delegator binding; and, per namespace that gets a
// sidecar, the sidecar's own identity (SidecarIdentity).
func ManagementObjects(c *spec.Config) []Object {
	var out []Object
	var sidecarNS []string
	for _, m := range ManagementComponents(c) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: m.Deployment + "-metrics", Namespace: m.Namespace, Labels: labels(map[string]string{ComponentLabel: m.Deployment, JobLabel: m.Deployment})},
			Spec: corev1.ServiceSpec{
				Selector: m.PodLabels,
				Ports:    []corev1.ServicePort{{Name: "https", Port: components.MetricsPort, TargetPort: intstr.FromInt32(components.MetricsPort), Protocol: corev1.ProtocolTCP}},
			},
		}
		out = append(out, toObject("v1", "Service", svc))
		if BindsController(m) {
			out = append(out, AuthDelegatorBinding(Prefix+"-"+m.Deployment+":auth-delegator", m.ServiceAccount, m.Namespace))
		}
		if m.Method == components.Sidecar && !slices.Contains(sidecarNS, m.Namespace) {
			sidecarNS = append(sidecarNS, m.Namespace)
		}
	}
	for _, ns := range sidecarNS {
		out = append(out, SidecarIdentity(ns)...)
	}
	return out
}

// BindsController reports whether the controller's own ServiceAccount gets an
// auth-delegator binding: where it serves metrics itself (secure
// diagnostics) and its role cannot review tokens. A sidecar reviews them as
// SidecarSA, so its controller gets no binding for it.
func BindsController(m components.Resolved) bool {
	return m.AuthDelegator && m.Method != components.Sidecar
}

// SidecarBinding is the name of the auth-delegator ClusterRoleBinding of a
// namespace's SidecarSA.
func SidecarBinding(namespace string) string { return SidecarSA + ":" + namespace + ":auth-delegator" }

// SidecarIdentity is what the sidecars of one namespace run as: ServiceAccount
// SidecarSA (never a pod's: no token is automounted for it), its
// auth-delegator binding, and its token Secret, which kube-controller-manager's
// token controller fills in (token, ca.crt, namespace). The Secret names the
// ServiceAccount by name only; the token controller adds its UID.
func SidecarIdentity(namespace string) []Object {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: SidecarSA, Namespace: namespace, Labels: labels(nil)},
		AutomountServiceAccountToken: ptr.To(false)}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SidecarTokenSecret, Namespace: namespace, Labels: labels(nil),
			Annotations: map[string]string{corev1.ServiceAccountNameKey: SidecarSA}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	return []Object{
		toObject("v1", "ServiceAccount", sa),
		AuthDelegatorBinding(SidecarBinding(namespace), SidecarSA, namespace),
		toObject("v1", "Secret", secret),
	}
}
