package components

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Method is how a management controller's metrics are served securely in a
// range of EKS Anywhere releases, and so what eksa-metrics does to it.
type Method string

const (
	// Shipped: the controller already serves metrics securely as EKS-A ships
	// it: Cluster API's secure diagnostics (TLS, TokenReview and
	// SubjectAccessReview) on :8443. eksa-metrics keeps the diagnostics flags
	// as shipped, adds --tls-min-version only when the spec asks for more than
	// the default, and renders a Service.
	Shipped Method = "secure diagnostics (shipped)"
	// ShippedProxy: the controller ships with a kube-rbac-proxy container of
	// its own on 8443 in front of a loopback listener. eksa-metrics leaves it
	// as it is, apart from the TLS minimum, and renders a Service.
	ShippedProxy Method = "its own kube-rbac-proxy (shipped)"
	// Sidecar: the controller serves metrics only as plain HTTP.
	// eksa-metrics adds a kube-rbac-proxy sidecar on 8443 and, where the
	// binary has a flag for it and the listener is not on loopback already,
	// moves the listener to 127.0.0.1.
	Sidecar Method = "kube-rbac-proxy sidecar (added)"
	// Unsupported: nothing eksa-metrics can secure without a flag the binary
	// lacks; the controller is left alone and a warning says why.
	Unsupported Method = "none"
)

// Release is how one range of EKS Anywhere releases ships a controller: from
// EKS-A From up to the next Release's From.
type Release struct {
	From spec.EKSAVersion
	// Version is the controller's version in that range, for messages and
	// docs ("Cluster API v1.8.3 to v1.13.2").
	Version string
	Method  Method
	// ServiceAccount the Deployment runs as.
	ServiceAccount string
	// AuthDelegator: the ServiceAccount may not create tokenreviews and
	// subjectaccessreviews, so eksa-metrics binds it to system:auth-delegator
	// where the controller serves metrics itself (secure diagnostics). A
	// sidecar eksa-metrics adds reviews tokens as a ServiceAccount of its own
	// (templates.SidecarSA): for a Sidecar release it is the fact as shipped
	// only, and nothing is bound to the controller's ServiceAccount.
	AuthDelegator bool
	// ListenFlag (Sidecar) moves the plain listener to 127.0.0.1:UpstreamPort;
	// empty when the binary's default is loopback already or its flags are
	// unknown.
	ListenFlag   string
	UpstreamPort int
	// ProxyContainer (ShippedProxy) is the controller's own kube-rbac-proxy.
	ProxyContainer string
	// TLSFlag sets the minimum TLS version of the metrics endpoint; empty
	// when nothing does (Cluster API before v1.8 applies --tls-min-version
	// to its webhook only).
	TLSFlag string
	// CertDir (Shipped) is the directory the controller's metrics server
	// reads tls.crt and tls.key from (controller-runtime's metrics server
	// from v0.16: Options.CertDir, which these binaries leave at its
	// default, ControllerRuntimeCertDir; it serves them through a
	// certificate watcher, and makes a self-signed certificate only when
	// they are absent). eksa-metrics mounts the serving certificate's Secret
	// there. Empty: not confirmed, so the scraper keeps skipping
	// verification of this target.
	CertDir string
	// ShippedArgs (Shipped) are the diagnostics arguments as the release
	// ships them, which the edit keeps in place; nil means Cluster API's
	// manifests' pair (--diagnostics-address=:8443
	// --insecure-diagnostics=false).
	ShippedArgs []string
	// Note is said to the user: why Unsupported, or a caveat.
	Note string
	// Unconfirmed says what of this release could not be read upstream
	// (its source is not public, or the tag was not at hand): the release
	// is assumed to ship as the one before, and a warning says so for this
	// component alone.
	Unconfirmed string
	// Source is the upstream file the facts were read from.
	Source string
}

// Management is one controller of a management cluster.
type Management struct {
	Namespace  string
	Deployment string
	// Container is the controller's own container.
	Container string
	// Providers lists the datacenterRef providers that run it; empty means
	// every management cluster.
	Providers []string
	// PodLabels select the Deployment's pods, as the shipped manifests label
	// them (clusterctl labels only top-level objects, so the pod templates
	// keep each provider's kustomize labels).
	PodLabels map[string]string
	// Releases, oldest first; the first starts at spec.MinEKSA.
	Releases []Release
}

// ID is "namespace/deployment", as managementComponents.exclude spells it.
func (m Management) ID() string { return m.Namespace + "/" + m.Deployment }

// ControllerRuntimeCertDir is controller-runtime's default metrics CertDir,
// $TMPDIR/k8s-metrics-server/serving-certs, in images that set no TMPDIR
// (kubernetes-sigs/controller-runtime@v0.16.0..v0.24.1:
// pkg/metrics/server/server.go setDefaults and createListener).
const ControllerRuntimeCertDir = "/tmp/k8s-metrics-server/serving-certs"

// MetricsPort is where every management component serves metrics securely.
const MetricsPort = 8443

// NewestChecked is the newest EKS Anywhere minor release the catalog was
// checked against.
var NewestChecked = spec.EKSAVersion{Major: 0, Minor: 27}

// Resolved is a controller with the release a cluster runs.
type Resolved struct {
	Management
	Release
}

// Resolve finds how the EKS-A releases lo..hi (inclusive; hi nil: no end)
// ship the controller. When the range spans releases that differ in what
// eksa-metrics would do, there is no single answer: ok is false and why
// says what to set.
func (m Management) Resolve(lo spec.EKSAVersion, hi *spec.EKSAVersion) (r Resolved, ok bool, why string) {
	var in []Release
	for i, rel := range m.Releases {
		starts := rel.From
		if hi != nil && hi.Less(starts) {
			break
		}
		if i+1 < len(m.Releases) && !lo.Less(m.Releases[i+1].From) {
			continue
		}
		in = append(in, rel)
	}
	if len(in) == 0 {
		return Resolved{}, false, fmt.Sprintf("no release of %s is known for EKS Anywhere %s", m.Deployment, lo)
	}
	for _, rel := range in[1:] {
		if !sameTreatment(in[0], rel) {
			var seen []string
			for _, r := range in {
				seen = append(seen, fmt.Sprintf("%s from EKS-A v0.%d: %s", r.Version, r.From.Minor, r.Method))
			}
			return Resolved{}, false, fmt.Sprintf("%s differs between the EKS Anywhere releases this spec may run (%s); set spec.eksaVersion so that eksa-metrics uses only flags the running binary has",
				m.Deployment, strings.Join(seen, "; "))
		}
	}
	r = Resolved{Management: m, Release: in[0]}
	for _, rel := range in {
		if rel.TLSFlag == "" {
			r.TLSFlag = "" // not every release in the range can set it
		}
		if rel.CertDir != r.CertDir {
			r.CertDir = "" // not every release in the range reads it from there
		}
	}
	for _, rel := range in[1:] {
		r.Version += ", " + rel.Version
	}
	return r, true, ""
}

// sameTreatment: two releases get the same objects and edits (a TLS flag
// or a certificate directory only some of them have is left out instead).
func sameTreatment(a, b Release) bool {
	a.From, a.Version, a.Note, a.Source, a.TLSFlag, a.Unconfirmed, a.CertDir = spec.EKSAVersion{}, "", "", "", "", "", ""
	b.From, b.Version, b.Note, b.Source, b.TLSFlag, b.Unconfirmed, b.CertDir = spec.EKSAVersion{}, "", "", "", "", "", ""
	return reflect.DeepEqual(a, b)
}

func eksa(minor int) spec.EKSAVersion { return spec.EKSAVersion{Major: 0, Minor: minor} }

func provider(p string) map[string]string { return map[string]string{"cluster.x-k8s.io/provider": p} }

// capiFamily are the Cluster API managers built on Cluster API's own flags:
// secure diagnostics shipped in every EKS-A release; --tls-min-version
// covers the diagnostics server from Cluster API v1.8 (EKS-A v0.21). The
// diagnostics options set no CertDir and no GetCertificate
// (util/flags/diagnostics.go:80-95 at v1.7.2, util/flags/manager.go:117-131
// from v1.8 to v1.14), and no manifest sets TMPDIR, so the metrics server
// reads ControllerRuntimeCertDir (controller-runtime v0.17.3 in v1.7.2,
// v0.24.1 in v1.14.0).
func capiFamily(ns, deployment, sa, label string, providers ...string) Management {
	const src = "kubernetes-sigs/cluster-api@v1.13.2:config/manager/manager.yaml, config/rbac/role.yaml, util/flags/manager.go:60,73,78"
	return Management{Namespace: ns, Deployment: deployment, Container: "manager", Providers: providers, PodLabels: provider(label),
		Releases: []Release{
			{From: eksa(20), Version: "Cluster API v1.7.2", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: sa, Source: "kubernetes-sigs/cluster-api@v1.7.2:util/flags/diagnostics.go:43-53, util/flags/tls.go"},
			{From: eksa(21), Version: "Cluster API v1.8.3 to v1.13.2", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: sa, TLSFlag: "--tls-min-version", Source: src},
			// v1.14 moved the core provider's config to core/config; util/flags
			// and every manager.yaml are unchanged from v1.13.2 (checked at
			// v1.14.0 and the release-1.14 head ba9e23ad, 18 commits later;
			// v1.14.3 itself was not at hand).
			{From: eksa(27), Version: "Cluster API v1.14.3", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: sa, TLSFlag: "--tls-min-version",
				Source: "kubernetes-sigs/cluster-api@v1.14.0:util/flags/manager.go:60,73,78,117-131, core/config/manager/manager.yaml:24-25,46-48 (and bootstrap/kubeadm, controlplane/kubeadm, test/infrastructure/docker config/manager/manager.yaml), */config/rbac/role.yaml (tokenreviews, subjectaccessreviews)"},
		}}
}

// ManagementCatalog lists the management controllers EKS Anywhere v0.20 to
// v0.27 install, in rendering order, as their shipped manifests and
// binaries are (docs/components.md cites each source).
//
// Every Shipped release builds its metrics options with Cluster API's
// flags (GetDiagnosticsOptions before v1.8, GetManagerOptions after; the
// AWS forks' util/flags are upstream's), whose TLS options set only the
// minimum version and cipher suites: no CertDir, CertName, KeyName or
// GetCertificate, and no manifest sets TMPDIR or mounts anything under
// /tmp/k8s-metrics-server (read at CAPV v1.10.4, v1.13.1, v1.16.1,
// v1.17.0-rc.2; CAPX v1.10.3; CAPC v0.6.1; etcdadm-bootstrap-provider
// v1.0.18, v1.0.19; etcdadm-controller v1.0.26, v1.0.28; eks-anywhere
// v0.24.0, v0.26.1, aebd9a0): so each reads ControllerRuntimeCertDir.
var ManagementCatalog = []Management{
	{Namespace: "eksa-system", Deployment: "eksa-controller-manager", Container: "manager", PodLabels: map[string]string{"control-plane": "eksa-controller-manager"},
		Releases: []Release{
			{From: eksa(20), Version: "eks-anywhere v0.20 to v0.23", Method: Sidecar, ServiceAccount: "eksa-controller-manager", AuthDelegator: true,
				ListenFlag: "--metrics-bind-address", UpstreamPort: 8080, Source: "aws/eks-anywhere@v0.23.7:manager/main.go:92, config/rbac/role.yaml"},
			{From: eksa(24), Version: "eks-anywhere v0.24", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "eksa-controller-manager", TLSFlag: "--tls-min-version",
				Source: "aws/eks-anywhere@v0.24.0:manager/main.go:101, config/manager/manager.yaml:28-32, config/rbac/role.yaml:15-27"},
			{From: eksa(25), Version: "eks-anywhere v0.25 and v0.26", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "eksa-controller-manager", AuthDelegator: true, TLSFlag: "--tls-min-version",
				Source: "aws/eks-anywhere@v0.26.1:manager/main.go:97, config/manager/manager.yaml, config/rbac/role.yaml (no tokenreviews since d4e1bc20c)"},
			{From: eksa(27), Version: "eks-anywhere v0.27", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "eksa-controller-manager", AuthDelegator: true, TLSFlag: "--tls-min-version",
				Unconfirmed: "the v0.27.0 tag of aws/eks-anywhere was not at hand; main of 2026-08-18 (aebd9a0) has the same manager/main.go flags, config/manager and config/rbac as v0.26.1",
				Source:      "aws/eks-anywhere@aebd9a0:manager/main.go:97,123-131, config/manager/manager.yaml:20-33, config/rbac/role.yaml"},
		}},
	capiFamily("capi-system", "capi-controller-manager", "capi-manager", "cluster-api"),
	capiFamily("capi-kubeadm-bootstrap-system", "capi-kubeadm-bootstrap-controller-manager", "capi-kubeadm-bootstrap-manager", "bootstrap-kubeadm"),
	capiFamily("capi-kubeadm-control-plane-system", "capi-kubeadm-control-plane-controller-manager", "capi-kubeadm-control-plane-manager", "control-plane-kubeadm"),
	{Namespace: "capv-system", Deployment: "capv-controller-manager", Container: "manager", Providers: []string{"vsphere"}, PodLabels: provider("infrastructure-vsphere"),
		Releases: []Release{
			{From: eksa(20), Version: "CAPV v1.10.4", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "default", Source: "kubernetes-sigs/cluster-api-provider-vsphere@v1.10.4:main.go:215-216, config/manager/manager.yaml"},
			{From: eksa(21), Version: "CAPV v1.11.3 to v1.13.1", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "default", TLSFlag: "--tls-min-version",
				Source: "kubernetes-sigs/cluster-api-provider-vsphere@v1.13.1:main.go:226, config/rbac/role_binding.yaml (subject default)"},
			{From: eksa(25), Version: "CAPV v1.15.3 and v1.16.1", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "capv-manager", TLSFlag: "--tls-min-version",
				Source: "kubernetes-sigs/cluster-api-provider-vsphere@v1.16.1:main.go:252, config/manager/manager.yaml, config/rbac/role.yaml"},
			{From: eksa(27), Version: "CAPV v1.17.0", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "capv-manager", TLSFlag: "--tls-min-version",
				Source: "kubernetes-sigs/cluster-api-provider-vsphere@v1.17.0-rc.2 (release-1.17 head 4a1c83ba1 unchanged):main.go:260,598-606, config/manager/manager.yaml:21-22,45-47,69, config/rbac/role.yaml:97-108"},
		}},
	capiFamily("capd-system", "capd-controller-manager", "capd-manager", "infrastructure-docker", "docker"),
	{Namespace: "capc-system", Deployment: "capc-controller-manager", Container: "manager", Providers: []string{"cloudstack"}, PodLabels: provider("infrastructure-cloudstack"),
		Releases: []Release{
			{From: eksa(20), Version: "CAPC v0.4.10-rc1 and v0.5.0", Method: ShippedProxy, ServiceAccount: "capc-controller-manager", ProxyContainer: "kube-rbac-proxy", TLSFlag: "--tls-min-version",
				Source: "kubernetes-sigs/cluster-api-provider-cloudstack@v0.5.0:config/default-with-metrics-port (built by eks-anywhere-build-tooling release-0.22 create_manifests.sh)"},
			{From: eksa(23), Version: "CAPC v0.6.1", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "capc-controller-manager", AuthDelegator: true, TLSFlag: "--tls-min-version",
				Source: "kubernetes-sigs/cluster-api-provider-cloudstack@v0.6.1:main.go:190, config/manager/manager.yaml, config/rbac/role.yaml (no tokenreviews)"},
		}},
	{Namespace: "capx-system", Deployment: "capx-controller-manager", Container: "manager", Providers: []string{"nutanix"}, PodLabels: provider("infrastructure-nutanix"),
		Releases: []Release{
			{From: eksa(20), Version: "CAPX v1.3.5 to v1.6.2", Method: ShippedProxy, ServiceAccount: "capx-controller-manager", ProxyContainer: "kube-rbac-proxy", TLSFlag: "--tls-min-version",
				Source: "nutanix-cloud-native/cluster-api-provider-nutanix@v1.6.1:config/default/manager_auth_proxy_patch.yaml, config/rbac/auth_proxy_role_binding.yaml"},
			// CAPX v1.7 dropped its kube-rbac-proxy (8f9d417b, "enable secure
			// metrics"): the manager serves /metrics itself through Cluster
			// API's flags with controller-runtime's authentication and
			// authorization filter, forced on even with
			// --insecure-diagnostics; its port is named https, and it ships
			// no --insecure-diagnostics argument, which is left so.
			{From: eksa(27), Version: "CAPX v1.10.3", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "capx-controller-manager", TLSFlag: "--tls-min-version",
				ShippedArgs: []string{"--diagnostics-address=:8443"},
				Source:      "nutanix-cloud-native/cluster-api-provider-nutanix@v1.10.3:main.go:174,228,235, config/default/manager_auth_proxy_patch.yaml:14-24 (port https 8443), config/rbac/auth_proxy_role.yaml:6-17; kubernetes-sigs/cluster-api@v1.13.1:util/flags/manager.go:60,73,78"},
		}},
	{Namespace: "capt-system", Deployment: "capt-controller-manager", Container: "manager", Providers: []string{"tinkerbell"}, PodLabels: provider("infrastructure-tinkerbell"),
		Releases: []Release{
			{From: eksa(20), Version: "CAPT v0.5.3 to v0.6.6", Method: Sidecar, ServiceAccount: "capt-controller-manager", AuthDelegator: true,
				ListenFlag: "--metrics-bind-addr", UpstreamPort: 8080, Source: "tinkerbell/cluster-api-provider-tinkerbell@v0.6.6:main.go:93, config/rbac/role.yaml (no tokenreviews)"},
			{From: eksa(27), Version: "CAPT v0.7.0 (development commit c3ee56df)", Method: Sidecar, ServiceAccount: "capt-controller-manager", AuthDelegator: true,
				ListenFlag: "--metrics-bind-addr", UpstreamPort: 8080,
				Unconfirmed: "commit c3ee56df was not at hand; v0.7.0 and main 35ff4e5 still serve plain HTTP on --metrics-bind-addr (default localhost:8080) with no filter",
				Source:      "tinkerbell/cluster-api-provider-tinkerbell@35ff4e5:main.go:113-116,258-260, config/rbac/role.yaml (no tokenreviews)"},
		}},
	{Namespace: "capas-system", Deployment: "capas-controller-manager", Container: "manager", Providers: []string{"snow"}, PodLabels: provider("infrastructure-aws-snow"),
		Releases: []Release{
			{From: eksa(20), Version: "CAPAS v0.1.30 to v0.3.3", Method: Sidecar, ServiceAccount: "capas-controller-manager", AuthDelegator: true, UpstreamPort: 8080,
				Note:   "the Snow provider's source and flags are not public, so no flag is passed: the sidecar assumes controller-runtime's default metrics listener on port 8080, which the binary keeps serving as plain HTTP inside the pod network; restrict it with a NetworkPolicy, and check the target with eksa-metrics verify",
				Source: "aws/eks-anywhere-build-tooling@release-0.26:projects/aws/cluster-api-provider-aws-snow/manifests/infrastructure-components.yaml"},
			{From: eksa(27), Version: "CAPAS v0.3.5", Method: Sidecar, ServiceAccount: "capas-controller-manager", AuthDelegator: true, UpstreamPort: 8080,
				Note:        "the Snow provider's source and flags are not public, so no flag is passed: the sidecar assumes controller-runtime's default metrics listener on port 8080, which the binary keeps serving as plain HTTP inside the pod network; restrict it with a NetworkPolicy, and check the target with eksa-metrics verify",
				Unconfirmed: "the v0.3.5 manifests were not at hand (eks-anywhere-build-tooling has no release-0.27 branch in the sources read)",
				Source:      "aws/eks-anywhere-build-tooling@release-0.26:projects/aws/cluster-api-provider-aws-snow/manifests/infrastructure-components.yaml"},
		}},
	{Namespace: "etcdadm-bootstrap-provider-system", Deployment: "etcdadm-bootstrap-provider-controller-manager", Container: "manager", PodLabels: provider("bootstrap-etcdadm"),
		Releases: []Release{
			{From: eksa(20), Version: "etcdadm-bootstrap-provider v1.0.15 and v1.0.16", Method: Sidecar, ServiceAccount: "etcdadm-bootstrap-provider-manager", AuthDelegator: true,
				ListenFlag: "--metrics-addr", UpstreamPort: 8080, Source: "aws/etcdadm-bootstrap-provider@v1.0.16:main.go:56, config/rbac/role.yaml (no tokenreviews)"},
			{From: eksa(24), Version: "etcdadm-bootstrap-provider v1.0.18 to v1.0.22", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "etcdadm-bootstrap-provider-manager", TLSFlag: "--tls-min-version",
				Source: "aws/etcdadm-bootstrap-provider@v1.0.22:main.go:60, config/manager/manager.yaml, config/rbac/role.yaml"},
			{From: eksa(27), Version: "etcdadm-bootstrap-provider (as pinned by v0.27)", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "etcdadm-bootstrap-provider-manager", TLSFlag: "--tls-min-version",
				Unconfirmed: "which release v0.27 pins was not at hand (the release notes read do not list it); v1.0.22, which v0.26 pins, is assumed",
				Source:      "aws/etcdadm-bootstrap-provider@v1.0.22:main.go:60, config/manager/manager.yaml, config/rbac/role.yaml"},
		}},
	{Namespace: "etcdadm-controller-system", Deployment: "etcdadm-controller-controller-manager", Container: "manager", PodLabels: provider("bootstrap-etcdadm-controller"),
		Releases: []Release{
			{From: eksa(20), Version: "etcdadm-controller v1.0.24", Method: Sidecar, ServiceAccount: "etcdadm-controller-manager", AuthDelegator: true,
				ListenFlag: "--metrics-addr", UpstreamPort: 8080, Source: "aws/etcdadm-controller@v1.0.24:main.go:64, config/rbac/role.yaml (no tokenreviews)"},
			{From: eksa(24), Version: "etcdadm-controller v1.0.26 to v1.0.28", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "etcdadm-controller-manager", TLSFlag: "--tls-min-version",
				Source: "aws/etcdadm-controller@v1.0.28:main.go:69, config/manager/manager.yaml, config/rbac/role.yaml"},
			{From: eksa(27), Version: "etcdadm-controller (as pinned by v0.27)", Method: Shipped, CertDir: ControllerRuntimeCertDir, ServiceAccount: "etcdadm-controller-manager", TLSFlag: "--tls-min-version",
				Unconfirmed: "which release v0.27 pins was not at hand; v1.0.28, the newest tag (main cabe3d4 is the same commit), is assumed",
				Source:      "aws/etcdadm-controller@v1.0.28:main.go:69, config/manager/manager.yaml, config/rbac/role.yaml"},
		}},
	{Namespace: "eksa-packages", Deployment: "eks-anywhere-packages", Container: "controller", PodLabels: map[string]string{"control-plane": "controller-manager"},
		Releases: []Release{
			{From: eksa(20), Version: "eks-anywhere-packages v0.4.5 to v0.4.17", Method: Sidecar, ServiceAccount: "eks-anywhere-packages-serviceaccount",
				ListenFlag: "--metrics-bind-address", UpstreamPort: 8080,
				Source: "aws/eks-anywhere-packages@v0.4.17:cmd/server.go:57, charts/eks-anywhere-packages/templates/deployment.yaml, values.yaml, clusterrolebinding.yaml (proxy role)"},
			{From: eksa(27), Version: "eks-anywhere-packages v0.4.20", Method: Sidecar, ServiceAccount: "eks-anywhere-packages-serviceaccount",
				ListenFlag: "--metrics-bind-address", UpstreamPort: 8080,
				Unconfirmed: "v0.4.20 was not at hand; v0.4.17 and main 1e8277a serve plain HTTP on --metrics-bind-address",
				Source:      "aws/eks-anywhere-packages@1e8277a:cmd/server.go:57,83-84, charts/eks-anywhere-packages/templates/deployment.yaml:48"},
		}},
	certManager("cert-manager", "cert-manager-controller", "cert-manager", "controller", "cert-manager", false),
	certManager("cert-manager-cainjector", "cert-manager-cainjector", "cert-manager-cainjector", "cainjector", "cainjector", true),
	certManager("cert-manager-webhook", "cert-manager-webhook", "cert-manager-webhook", "webhook", "webhook", true),
}

// certManager: no authentication of its own, so a sidecar in front of
// --metrics-listen-address (the controller's since before v1.14; the
// cainjector's and webhook's since v1.16, EKS-A v0.22).
func certManager(deployment, container, sa, component, name string, since116 bool) Management {
	m := Management{Namespace: "cert-manager", Deployment: deployment, Container: container,
		PodLabels: map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/component": component, "app.kubernetes.io/instance": "cert-manager"}}
	sidecar := func(from int, version string) Release {
		return Release{From: eksa(from), Version: version, Method: Sidecar, ServiceAccount: sa, AuthDelegator: true, ListenFlag: "--metrics-listen-address", UpstreamPort: 9402,
			Source: "cert-manager/cert-manager@v1.20.2 (controller: cmd/controller/app/options/options.go:192; cainjector: cmd/cainjector/app/options/options.go:114; webhook: pkg/webhook/options/options.go:101); eks-anywhere-build-tooling@release-0.26:projects/cert-manager/cert-manager/manifests/cert-manager.yaml"}
	}
	// v1.21: the same flags (and their TLS options, which still have no
	// authentication); the controller's metrics Service port is named
	// http-metrics in the chart, which eksa-metrics' own Service does not
	// use. v1.21.2 is a patch release of bug and security fixes.
	v121 := sidecar(27, "cert-manager v1.21.2")
	v121.Source = "cert-manager/cert-manager@v1.21.1 (release-1.21 head 378ef0e28: go.mod only) (controller: cmd/controller/app/options/options.go:206; cainjector: cmd/cainjector/app/options/options.go:117; webhook: pkg/webhook/options/options.go:101; deploy/charts/cert-manager/templates/service.yaml:30-31)"
	if !since116 {
		m.Releases = []Release{sidecar(20, "cert-manager v1.14.7 to v1.20.2"), v121}
		return m
	}
	m.Releases = []Release{
		{From: eksa(20), Version: "cert-manager v1.14.7 and v1.15.5", Method: Unsupported, ServiceAccount: sa,
			Note:   "cert-manager before v1.16 has no --metrics-listen-address for " + component + ", so its metrics cannot be moved behind a proxy; it is not scraped",
			Source: "cert-manager/cert-manager@v1.15.5 (no metrics flags in cmd/cainjector/app/options, pkg/webhook/options)"},
		sidecar(22, "cert-manager v1.16.5 to v1.20.2"),
		v121,
	}
	return m
}
