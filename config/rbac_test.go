package config

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

type rule struct {
	APIGroups, Resources, Verbs, ResourceNames, NonResourceURLs []string
}

type doc struct {
	Kind     string
	Metadata struct{ Name, Namespace string }
	Rules    []rule
	RoleRef  struct{ Kind, Name string }
	Subjects []struct{ Kind, Name, Namespace string }
}

// The controller's rights as `controller manifests` prints them: no
// cluster-wide read or write of Secrets, no cluster-wide write of
// DaemonSets or Deployments, DaemonSet and Deployment writes only in the
// namespaces the catalogs name, nothing that escalates (escalate, bind,
// impersonate, wildcards, pods, ServiceAccount tokens), and every binding
// to the controller's ServiceAccount in the namespace asked for.
func TestControllerRBACIsLeastPrivilege(t *testing.T) {
	out, err := BuildWith(Options{Image: ImageRepository + ":v0.1.0", Namespace: "obs-system"})
	if err != nil {
		t.Fatal(err)
	}
	podNamespaces := []string{templates.SystemNS}
	for _, m := range components.ManagementCatalog {
		podNamespaces = append(podNamespaces, m.Namespace)
	}
	writes := []string{"create", "update", "patch", "delete", "deletecollection", "*"}
	var roles, bindings, policies int
	for _, raw := range strings.Split(string(out), "\n---\n") {
		var d doc
		if err := yaml.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatal(err)
		}
		switch d.Kind {
		case "ClusterRoleBinding", "RoleBinding":
			bindings++
			for _, s := range d.Subjects {
				if s.Kind != "ServiceAccount" || s.Name != ControllerName || s.Namespace != "obs-system" {
					t.Errorf("%s %s binds %s %s/%s, not the controller's ServiceAccount in obs-system", d.Kind, d.Metadata.Name, s.Kind, s.Namespace, s.Name)
				}
			}
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			policies++
		case "ClusterRole", "Role":
			roles++
		}
		if d.Kind != "ClusterRole" && d.Kind != "Role" {
			continue
		}
		where := d.Kind + " " + d.Metadata.Namespace + "/" + d.Metadata.Name
		for _, r := range d.Rules {
			for _, v := range r.Verbs {
				if slices.Contains([]string{"escalate", "bind", "impersonate", "*"}, v) {
					t.Errorf("%s: verb %s on %v lets the controller escalate", where, v, r.Resources)
				}
			}
			for _, res := range r.Resources {
				if res == "*" || slices.Contains(r.APIGroups, "*") {
					t.Errorf("%s: a wildcard rule %v", where, r)
				}
				writesIt := slices.ContainsFunc(r.Verbs, func(v string) bool { return slices.Contains(writes, v) })
				switch {
				case d.Kind == "ClusterRole" && res == "secrets":
					t.Errorf("%s: Secrets cluster-wide (%v)", where, r.Verbs)
				case res == "secrets" && len(r.ResourceNames) == 0 && !slices.Equal(r.Verbs, []string{"create"}):
					// A read of a namespace's Secrets is a read of its
					// kubeconfigs, CA keys and tokens: by name only.
					t.Errorf("%s: Secrets %v without resourceNames", where, r.Verbs)
				case (res == "pods" || res == "serviceaccounts/token" || res == "pods/exec" || res == "nodes/proxy") && writesIt:
					t.Errorf("%s: %s %v runs or impersonates", where, res, r.Verbs)
				case res == "daemonsets" || res == "deployments" || res == "statefulsets" || res == "jobs" || res == "cronjobs" || res == "replicasets":
					if !writesIt {
						continue
					}
					if d.Kind == "ClusterRole" {
						t.Errorf("%s: %s %v cluster-wide", where, res, r.Verbs)
					} else if !slices.Contains(podNamespaces, d.Metadata.Namespace) {
						t.Errorf("%s: %s %v in a namespace no catalog names", where, res, r.Verbs)
					}
					if res == "deployments" && len(r.ResourceNames) == 0 {
						t.Errorf("%s: Deployments %v without resourceNames", where, r.Verbs)
					}
					if res == "daemonsets" && len(r.ResourceNames) == 0 && !slices.Equal(r.Verbs, []string{"get", "list", "watch", "create"}) {
						t.Errorf("%s: DaemonSets %v without resourceNames", where, r.Verbs)
					}
				}
			}
		}
	}
	if roles < 3 || bindings != roles || policies != 2 {
		t.Errorf("%d roles, %d bindings, %d admission policy objects: want a binding per role and the policy with its binding", roles, bindings, policies)
	}
}

// The monitoring namespaces asked for get a Role, and Namespaces lists
// every namespace with a Role.
func TestNamespacesHaveRoles(t *testing.T) {
	o := Options{Image: ImageRepository + ":v0.1.0", Namespace: DefaultNamespace, MonitoringNamespaces: []string{"obs"}}
	ns := Namespaces(o)
	for _, want := range []string{"obs", "eksa-system", templates.SystemNS, DefaultNamespace, "cert-manager"} {
		if !slices.Contains(ns, want) {
			t.Errorf("no Role in %s: %v", want, ns)
		}
	}
	if slices.Contains(ns, "monitoring") {
		t.Errorf("a Role in monitoring although only obs was asked for: %v", ns)
	}
}

// The workload kubeconfigs are granted by name, for the Clusters named
// only; with none, the Role has no rule (a rule without resourceNames
// would be every Secret of eksa-system); the Secrets of the Roles are
// those the renderer writes, listed by name.
func TestKubeconfigsAreGrantedByName(t *testing.T) {
	role := func(o Options) []rule {
		t.Helper()
		out, err := BuildWith(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range strings.Split(string(out), "\n---\n") {
			var d doc
			if err := yaml.Unmarshal([]byte(raw), &d); err != nil {
				t.Fatal(err)
			}
			if d.Kind == "Role" && d.Metadata.Name == KubeconfigRole && d.Metadata.Namespace == "eksa-system" {
				return d.Rules
			}
		}
		t.Fatal("no Role " + KubeconfigRole)
		return nil
	}
	if r := role(Options{Image: ImageRepository + ":v0.1.0"}); len(r) != 0 {
		t.Errorf("without workload clusters: rules %v", r)
	}
	r := role(Options{Image: ImageRepository + ":v0.1.0", WorkloadClusters: []string{"w2", "w1", "w2"}})
	if len(r) != 1 || !slices.Equal(r[0].Verbs, []string{"get"}) || !slices.Equal(r[0].ResourceNames, []string{"w1-kubeconfig", "w2-kubeconfig"}) {
		t.Errorf("rules %v", r)
	}
	named := Named(Options{MonitoringNamespaces: []string{"obs"}})["/secrets"]
	for ns, names := range templates.SecretNames([]string{"obs"}) {
		if !slices.Equal(named[ns], names) {
			t.Errorf("Secrets listed by name in %s: %v, want %v", ns, named[ns], names)
		}
	}
	if len(named["eksa-system"]) == 0 || slices.ContainsFunc(named["eksa-system"], func(n string) bool { return strings.HasSuffix(n, "-kubeconfig") }) {
		t.Errorf("eksa-system's Secrets by name: %v", named["eksa-system"])
	}
}
