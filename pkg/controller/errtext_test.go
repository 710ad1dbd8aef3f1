package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A reply that is not the Kubernetes API's (any service a kubeconfig's
// server may name) does not reach a status: client-go quotes its body in
// the error; the status says it was withheld. A Kubernetes Status' message
// stays.
func TestErrTextWithholdsForeignReplies(t *testing.T) {
	const marker = "internal-service-reply-7f3a"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/kube-public/configmaps/status") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps \"status\" is forbidden: a real reason","reason":"Forbidden","code":403}`)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, marker+" token=abc")
	}))
	defer srv.Close()
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	_, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), "x", metav1.GetOptions{})
	if err == nil || !strings.Contains(err.Error(), marker) {
		t.Fatalf("client-go's error no longer quotes the body (%v): the test proves nothing", err)
	}
	wrapped := fmt.Errorf("reading ConfigMap default/x in the workload cluster: %w", err)
	if got := errText(wrapped); strings.Contains(got, marker) || !strings.Contains(got, withheld) || !strings.HasPrefix(got, "reading ConfigMap") {
		t.Errorf("errText = %q", got)
	}
	_, err = cs.CoreV1().ConfigMaps("kube-public").Get(context.Background(), "status", metav1.GetOptions{})
	if got := errText(err); !strings.Contains(got, "a real reason") {
		t.Errorf("a Kubernetes Status lost its message: %q", got)
	}
}
