package framework

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kcpv1beta1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1"
	kcpv1beta2 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// ServeKCPVersions makes the KubeadmControlPlane CRD serve v1beta1 and
// v1beta2 at once, stored as storage, the way a management cluster has it
// from Cluster API v1.11 on (EKS Anywhere v0.25): the API server converts
// between them through a webhook that this test serves on loopback with
// the conversion functions of Cluster API's own API module (what the
// kubeadm control plane provider's webhook runs, without the annotation
// that carries fields one version lacks). Called again, it moves the
// storage version, as an upgrade of Cluster API does.
func (cp *ControlPlane) ServeKCPVersions(t testing.TB, storage string) {
	t.Helper()
	if cp.Host != nil {
		t.Fatal("ServeKCPVersions: the webhook serves on the test's loopback, which an API server in a network namespace does not reach")
	}
	if cp.conversionURL == "" {
		cp.conversionURL, cp.conversionCA = serveKCPConversion(t, cp.PKI)
	}
	files, _ := filepath.Glob(filepath.Join(BinDir(), "crds", "cluster-api", "*.yaml"))
	for _, f := range files {
		for _, crd := range ReadYAML(t, f) {
			spec := crd["spec"].(map[string]any)
			if spec["group"] != kcpv1beta2.GroupVersion.Group || spec["names"].(map[string]any)["kind"] != "KubeadmControlPlane" {
				continue
			}
			var keep []any
			for _, v := range spec["versions"].([]any) {
				vm := v.(map[string]any)
				if name := vm["name"]; name == "v1beta1" || name == "v1beta2" {
					vm["served"], vm["storage"] = true, name == storage
					keep = append(keep, vm)
				}
			}
			if len(keep) != 2 {
				t.Fatalf("%s: the KubeadmControlPlane CRD does not have both v1beta1 and v1beta2", f)
			}
			spec["versions"] = keep
			spec["conversion"] = map[string]any{"strategy": "Webhook", "webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"},
				"clientConfig":             map[string]any{"url": cp.conversionURL, "caBundle": cp.conversionCA},
			}}
			data, _ := json.Marshal(crd)
			name := crd["metadata"].(map[string]any)["name"].(string)
			force := true
			gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
			if _, err := cp.Dynamic.Resource(gvr).Patch(context.Background(), name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "testbed", Force: &force}); err != nil {
				t.Fatalf("serving both KubeadmControlPlane versions: %v", err)
			}
			cp.waitEstablished(t, name)
			return
		}
	}
	t.Fatalf("no KubeadmControlPlane CRD in %s: run make testbed", filepath.Join(BinDir(), "crds", "cluster-api"))
}

// serveKCPConversion starts the conversion webhook; it returns its URL and
// the CA bundle that verifies it.
func serveKCPConversion(t testing.TB, pki *PKI) (url, caBundle string) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kcpv1beta1.AddToScheme, kcpv1beta2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	certFile, keyFile := pki.Serving(t, "kcp-conversion", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		var review apiextensionsv1.ConversionReview
		if err == nil {
			err = json.Unmarshal(body, &review)
		}
		if err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("not a ConversionReview: %v", err), http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			out, err := convertKCP(scheme, raw.Raw, review.Request.DesiredAPIVersion)
			if err != nil {
				resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
				resp.ConvertedObjects = nil
				break
			}
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
		}
		review.Request, review.Response = nil, resp
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	srv.Listener.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca, err := os.ReadFile(pki.CACert)
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL + "/convert", base64.StdEncoding.EncodeToString(ca)
}

func convertKCP(scheme *runtime.Scheme, raw []byte, desired string) ([]byte, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, err
	}
	from, err := scheme.New(tm.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, from); err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(desired)
	if err != nil {
		return nil, err
	}
	to, err := scheme.New(gv.WithKind(tm.Kind))
	if err != nil {
		return nil, err
	}
	if err := scheme.Convert(from, to, nil); err != nil {
		return nil, fmt.Errorf("converting %s to %s: %w", tm.GroupVersionKind(), desired, err)
	}
	// The API module leaves the infrastructure reference to the webhook,
	// which maps an API version to a group and back by the provider's
	// contract (v1beta1 for the providers the fixtures use).
	switch f := from.(type) {
	case *kcpv1beta1.KubeadmControlPlane:
		if k, ok := to.(*kcpv1beta2.KubeadmControlPlane); ok {
			ref := f.Spec.MachineTemplate.InfrastructureRef
			rgv, _ := schema.ParseGroupVersion(ref.APIVersion)
			k.Spec.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: rgv.Group, Kind: ref.Kind, Name: ref.Name}
		}
	case *kcpv1beta2.KubeadmControlPlane:
		if k, ok := to.(*kcpv1beta1.KubeadmControlPlane); ok {
			ref := f.Spec.MachineTemplate.Spec.InfrastructureRef
			k.Spec.MachineTemplate.InfrastructureRef = corev1.ObjectReference{
				APIVersion: schema.GroupVersion{Group: ref.APIGroup, Version: "v1beta1"}.String(), Kind: ref.Kind, Name: ref.Name, Namespace: f.Namespace}
		}
	}
	to.GetObjectKind().SetGroupVersionKind(gv.WithKind(tm.Kind))
	return json.Marshal(to)
}
