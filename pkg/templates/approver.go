package templates

import (
	"encoding/json"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// KubeletApprover names the Deployment, ServiceAccount, ClusterRole and
// ClusterRoleBinding of the approver of the kubelets' serving-certificate
// requests (tls.kubeletServingCertificates).
const KubeletApprover = Prefix + "-kubelet-serving-approver"

// KubeletApproverCommand is the eksa-metrics command the approver runs.
const KubeletApproverCommand = "kubelet-approver"

// KubeletApproverRules are all the approver may do cluster-wide: read the
// requests of the kubelet-serving signer's kind and the Nodes they name,
// approve or deny requests for that one signer and sign them (the API
// server checks the approve verb on signers/<signerName> for every approval
// or denial, and the sign verb for every certificate written:
// plugin/pkg/admission/certificates/approval and .../signing), read the Services named
// kubernetes (default/kubernetes: its address is never approved), and
// review the tokens of those who read its metrics (a TokenReview, then a
// SubjectAccessReview for get on /metrics: what system:auth-delegator
// grants).
func KubeletApproverRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests/approval"}, Verbs: []string{"update"}},
		{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{certificatesv1.KubeletServingSignerName}, Verbs: []string{"approve", "sign"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, ResourceNames: []string{"kubernetes"}, Verbs: []string{"get"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}
}

// KubeletApproverComponent is the component label value (and, after
// Prefix, the name) of the approver's metrics Service.
const KubeletApproverComponent = "kubelet-serving-approver"

// KubeletApproverServingName is the name of the approver's metrics
// certificate, which it issues itself with the kubelet-serving CA: its
// Service's DNS name.
const KubeletApproverServingName = KubeletApprover + "." + SystemNS + ".svc"

// KubeletApproverEventRules are what it may do in the default namespace,
// where the events on a (cluster-scoped) request go: write its events.
func KubeletApproverEventRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}}
}

// KubeletApproverPodRules are what it may do in kube-system: read the pods
// (it watches kube-controller-manager's mirror pods only, and approves
// nothing while one on the control plane would sign with the cluster CA).
func KubeletApproverPodRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}
}

// KubeletMachines names the ConfigMap in kube-system through which the
// controller publishes a workload cluster's Machines to its approver
// (their addresses, as the infrastructure provider wrote them in the
// management cluster); KubeletMachinesKey is its one key, a JSON list of
// spec.Machine.
const (
	KubeletMachines    = Prefix + "-kubelet-machines"
	KubeletMachinesKey = "machines.json"
)

// KubeletApproverMachineRules are what it may read of the Machines that
// vouch for the nodes: the Cluster API Machines in eksa-system, where
// the cluster holds its own (a self-managed cluster).
func KubeletApproverMachineRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"machines"}, Verbs: []string{"get", "list", "watch"}}}
}

// KubeletMachinesData is the ConfigMap data of the Machines published to
// a workload cluster's approver: sorted by name, so that the same Machines
// give the same object.
func KubeletMachinesData(machines []spec.Machine) map[string]string {
	ms := slices.Clone(machines)
	slices.SortFunc(ms, func(a, b spec.Machine) int { return strings.Compare(a.Name, b.Name) })
	if ms == nil {
		ms = []spec.Machine{}
	}
	b, err := json.Marshal(ms)
	if err != nil {
		panic(err) // strings only
	}
	return map[string]string{KubeletMachinesKey: string(b)}
}

// KubeletApproverArgs are the approver's arguments: where the Machines
// that vouch for the nodes are, and the names and addresses it never
// approves, from the Cluster's spec.
func KubeletApproverArgs(c *spec.Config) []string {
	args := []string{KubeletApproverCommand}
	if c.PublishMachines {
		args = append(args, "--machines-configmap="+SystemNS+"/"+KubeletMachines)
	} else {
		args = append(args, "--cluster-name="+c.ClusterName, "--machines-namespace="+spec.MachinesNamespace)
	}
	for _, b := range c.ServiceCIDRs {
		args = append(args, "--service-cidr="+b)
	}
	if c.ControlPlaneEndpoint != "" {
		args = append(args, "--control-plane-endpoint="+c.ControlPlaneEndpoint)
	}
	return append(args, "--ca-cert-file="+kubeletCADir+"/tls.crt", "--ca-key-file="+kubeletCADir+"/tls.key")
}

// kubeletCADir is where the approver mounts the Secret KubeletServingCA.
const kubeletCADir = "/etc/eksa-metrics/kubelet-serving-ca"

// KubeletApproverObjects are the approver that keeps giving every kubelet
// (every node that joins later, every renewal) its serving certificate:
// one replica on the control plane, which exists whenever there are
// requests to approve.
func KubeletApproverObjects(c *spec.Config) []Object {
	if !c.KubeletServingCertificates {
		return nil
	}
	sel := map[string]string{NameLabel: KubeletApprover}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Namespace: SystemNS, Labels: labels(nil)}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Labels: labels(nil)}, Rules: KubeletApproverRules()}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Labels: labels(nil)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: KubeletApprover},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: KubeletApprover, Namespace: SystemNS}},
	}
	events := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Namespace: metav1.NamespaceDefault, Labels: labels(nil)}, Rules: KubeletApproverEventRules()}
	eventsBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Namespace: metav1.NamespaceDefault, Labels: labels(nil)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: KubeletApprover},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: KubeletApprover, Namespace: SystemNS}},
	}
	podRules := KubeletApproverPodRules()
	if c.PublishMachines {
		podRules = append(podRules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{KubeletMachines}, Verbs: []string{"get", "list", "watch"}})
	}
	pods := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Namespace: SystemNS, Labels: labels(nil)}, Rules: podRules}
	podsBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Namespace: SystemNS, Labels: labels(nil)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: KubeletApprover},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: KubeletApprover, Namespace: SystemNS}},
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Namespace: SystemNS, Labels: labels(sel)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(sel)},
				Spec: corev1.PodSpec{
					ServiceAccountName: KubeletApprover,
					PriorityClassName:  "system-cluster-critical",
					// On the control plane, whatever its taints (see Proxies).
					NodeSelector: map[string]string{spec.ControlPlaneNodeLabel: ""},
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						FSGroup:        ptr.To[int64](65532), // reads the CA's volume
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            "approver",
						Image:           c.Images.EKSAMetrics,
						Args:            KubeletApproverArgs(c),
						SecurityContext: hardened(65532),
						Resources:       smallResources(),
						Ports:           []corev1.ContainerPort{{Name: "https", ContainerPort: KubeletApproverMetricsPort, Protocol: corev1.ProtocolTCP}},
						VolumeMounts:    []corev1.VolumeMount{{Name: "ca", MountPath: kubeletCADir, ReadOnly: true}},
					}},
					// The CA apply creates before the objects.
					Volumes: []corev1.Volume{{Name: "ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: KubeletServingCA, DefaultMode: ptr.To[int32](0o440)}}}},
				},
			},
		},
	}
	// The Service the scrapers find its metrics endpoint by (headless, as
	// the proxies').
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Namespace: SystemNS,
			Labels: labels(map[string]string{ComponentLabel: KubeletApproverComponent, JobLabel: KubeletApproverComponent})},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  sel,
			Ports:     []corev1.ServicePort{{Name: "https", Port: KubeletApproverMetricsPort, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP}},
		},
	}
	var machines []Object
	if c.PublishMachines {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: KubeletMachines, Namespace: SystemNS, Labels: labels(nil)}, Data: KubeletMachinesData(c.Machines)}
		machines = append(machines, toObject("v1", "ConfigMap", cm))
	} else {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Namespace: spec.MachinesNamespace, Labels: labels(nil)}, Rules: KubeletApproverMachineRules()}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: KubeletApprover, Namespace: spec.MachinesNamespace, Labels: labels(nil)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: KubeletApprover},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: KubeletApprover, Namespace: SystemNS}},
		}
		machines = append(machines, toObject("rbac.authorization.k8s.io/v1", "Role", role), toObject("rbac.authorization.k8s.io/v1", "RoleBinding", binding))
	}
	return append(machines,
		toObject("v1", "ServiceAccount", sa),
		toObject("rbac.authorization.k8s.io/v1", "ClusterRole", role),
		toObject("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding),
		toObject("rbac.authorization.k8s.io/v1", "Role", events),
		toObject("rbac.authorization.k8s.io/v1", "RoleBinding", eventsBinding),
		toObject("rbac.authorization.k8s.io/v1", "Role", pods),
		toObject("rbac.authorization.k8s.io/v1", "RoleBinding", podsBinding),
		toObject("apps/v1", "Deployment", dep),
		toObject("v1", "Service", svc),
	)
}

// KubeletApproverMetricsPort is the port of the approver's metrics
// endpoint (its --metrics-bind-address), named https in its pod and Service.
const KubeletApproverMetricsPort = 8443
