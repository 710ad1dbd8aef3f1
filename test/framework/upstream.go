package framework

import (
	"context"
	"slices"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// InstallUpstream creates what real upstream manifests of the EKS-A
// management components (testutil.UpstreamManifest) hold that an API server
// keeps without their CRDs and webhooks: namespaces, ServiceAccounts, RBAC,
// ConfigMaps, Services and Deployments, as clusterctl and Helm would (field
// manager "clusterctl"). It returns the Deployments by "namespace/name".
func (cp *ControlPlane) InstallUpstream(t testing.TB, files ...string) map[string]map[string]any {
	t.Helper()
	deployments := map[string]map[string]any{}
	kinds := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Service", "Deployment"}
	for _, file := range files {
		var objs []map[string]any
		for _, doc := range testutil.UpstreamManifest(t, file) {
			kind, _ := doc["kind"].(string)
			if !slices.Contains(kinds, kind) {
				continue
			}
			if kind == "Namespace" || kind == "ServiceAccount" {
				// eks-anywhere-build-tooling's yq edit leaves a stray spec
				// on these in the etcdadm manifests (see the fixtures' README).
				delete(doc, "spec")
			}
			if kind == "Deployment" {
				md := doc["metadata"].(map[string]any)
				deployments[md["namespace"].(string)+"/"+md["name"].(string)] = doc
			}
			objs = append(objs, doc)
		}
		slices.SortStableFunc(objs, func(a, b map[string]any) int { // namespaces first
			return slices.Index(kinds, a["kind"].(string)) - slices.Index(kinds, b["kind"].(string))
		})
		if err := cp.Apply(context.Background(), "clusterctl", true, objs...); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return deployments
}
