package kubeadm

import (
	"maps"
	"slices"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// What EKS Anywhere itself renders into the KubeadmControlPlane, per provider
// (its templates pkg/providers/*/config/template-cp.yaml at v0.26). Only the
// names matter for uniqueness; values matter where eksa-metrics merges into
// them (feature-gates). Tinkerbell renders no controllerManager/scheduler
// extraArgs and Nutanix no scheduler block at all.
const cipherSuites = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"

var auditArgs = Args{
	{"audit-log-maxage", "30"},
	{"audit-log-maxbackup", "10"},
	{"audit-log-maxsize", "512"},
	{"audit-log-path", "/var/log/kubernetes/api-audit.log"},
	{"audit-policy-file", "/etc/kubernetes/audit-policy.yaml"},
}

// EKSADefaults returns the extraArgs EKS Anywhere renders for the cluster.
func EKSADefaults(c *spec.Config) map[Component]Args {
	out := map[Component]Args{}
	set := func(comp Component, args ...Arg) {
		for _, a := range args {
			out[comp] = out[comp].Set(a.Name, a.Value)
		}
	}
	kmsGate := c.EtcdEncryption && c.KubeVersion.AtLeast(29)
	cloudProvider := !c.KubeVersion.AtLeast(33)
	switch c.Provider {
	case spec.ProviderVSphere, spec.ProviderCloudStack:
		set(APIServer, auditArgs...)
		set(APIServer, Arg{"profiling", "false"}, Arg{"tls-cipher-suites", cipherSuites})
		if cloudProvider {
			set(APIServer, Arg{"cloud-provider", "external"})
		}
		if kmsGate {
			set(APIServer, Arg{FeatureGates, "KMSv1=true"})
		}
		set(ControllerManager, Arg{"cloud-provider", "external"}, Arg{"profiling", "false"}, Arg{"tls-cipher-suites", cipherSuites})
		set(Scheduler, Arg{"profiling", "false"}, Arg{"tls-cipher-suites", cipherSuites})
		if !c.ExternalEtcd {
			set(Etcd, Arg{"cipher-suites", cipherSuites})
		}
	case spec.ProviderDocker:
		set(APIServer, auditArgs...)
		set(APIServer, Arg{"profiling", "false"}, Arg{"tls-cipher-suites", cipherSuites})
		set(ControllerManager, Arg{"enable-hostpath-provisioner", "true"}, Arg{"profiling", "false"}, Arg{"tls-cipher-suites", cipherSuites})
		set(Scheduler, Arg{"profiling", "false"}, Arg{"tls-cipher-suites", cipherSuites})
		if !c.ExternalEtcd {
			set(Etcd, Arg{"cipher-suites", cipherSuites})
		}
	case spec.ProviderTinkerbell:
		set(APIServer, auditArgs...)
	case spec.ProviderNutanix:
		set(APIServer, auditArgs...)
		if cloudProvider {
			set(APIServer, Arg{"cloud-provider", "external"})
		}
		if kmsGate {
			set(APIServer, Arg{FeatureGates, "KMSv1=true"})
		}
		set(ControllerManager, Arg{"cloud-provider", "external"}, Arg{"enable-hostpath-provisioner", "true"})
	case spec.ProviderSnow:
		set(ControllerManager, Arg{"tls-cipher-suites", cipherSuites})
	}
	// Every provider's template then adds the user's apiServerExtraArgs.
	// A user feature-gates joins EKS-A's KMSv1 gate here (the gates both
	// items would enable; a user gate of the same name wins).
	for _, name := range slices.Sorted(maps.Keys(c.APIServerExtraArgs)) {
		v := c.APIServerExtraArgs[name]
		if name == FeatureGates {
			if kms, ok := out[APIServer].Get(FeatureGates); ok {
				v = MergeFeatureGates(kms+","+v, nil)
			}
		}
		set(APIServer, Arg{name, v})
	}
	return out
}

// UserArg reports whether the Cluster's apiServerExtraArgs set the flag.
func UserArg(c *spec.Config, comp Component, name string) bool {
	_, ok := c.APIServerExtraArgs[name]
	return ok && comp == APIServer
}
