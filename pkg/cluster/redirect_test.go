package cluster

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// An API server that redirects (a hostile workload API server, or a
// kubeconfig Secret whose server someone changed) gets neither the token
// nor a request body sent on: the read and the write both fail with a
// RedirectError, the address redirected to receives nothing, and the error
// holds nothing of the reply.
func TestClientsRefuseRedirects(t *testing.T) {
	var stolen atomic.Int32
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		t.Errorf("the client followed a redirect: %s %s (Authorization %q)", r.Method, r.URL, r.Header.Get("Authorization"))
	}))
	defer sink.Close()
	redirectVersion := atomic.Bool{}
	hostile := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" && !redirectVersion.Load() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
			return
		}
		http.Redirect(w, r, sink.URL+"/steal"+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer hostile.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hostile.Certificate().Raw})
	cfg := &rest.Config{Host: hostile.URL, BearerToken: "clearly-fake-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}

	c, err := FromRESTConfig(context.Background(), "workload", "test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "kube-system"}, StringData: map[string]string{"tls.key": "clearly-fake"}}
	_, err = c.Core.CoreV1().Secrets("kube-system").Create(context.Background(), secret, metav1.CreateOptions{})
	var re *RedirectError
	if !errors.As(err, &re) || re.Status != http.StatusTemporaryRedirect || re.Method != http.MethodPost {
		t.Fatalf("a write answered with 307: %v", err)
	}
	if strings.Contains(err.Error(), sink.URL) || strings.Contains(err.Error(), "steal") {
		t.Errorf("the error repeats the reply: %v", err)
	}

	redirectVersion.Store(true)
	if _, err := FromRESTConfig(context.Background(), "workload", "test", cfg); !errors.As(err, &re) {
		t.Fatalf("connecting to a server whose /version redirects: %v", err)
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("%d requests reached the address redirected to", n)
	}
}

// An API server that answers with a huge reply (streamed, or announced by
// its Content-Length) gets a ReplyTooLargeError, and the client never holds
// the reply whole.
func TestClientsRefuseHugeReplies(t *testing.T) {
	const huge = 192 << 20
	hostile := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/version":
			_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
		case "/api/v1/namespaces/announced/secrets":
			w.Header().Set("Content-Length", fmt.Sprint(huge))
			w.WriteHeader(http.StatusOK)
		default: // streamed, no length
			_, _ = w.Write([]byte(`{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"`))
			chunk := bytes.Repeat([]byte("a"), 1<<20)
			for i := 0; i < huge>>20; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			_, _ = w.Write([]byte(`"}}]}`))
		}
	}))
	defer hostile.Close()
	c := connectTo(t, hostile)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, ns := range []string{"streamed", "announced"} {
		_, err := c.Core.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
		var tooLarge *ReplyTooLargeError
		if !errors.As(err, &tooLarge) {
			t.Errorf("a %d MiB reply (%s): %v", huge>>20, ns, err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 3*MaxReply+(32<<20) {
		t.Errorf("reading the huge replies allocated %d MiB", got>>20)
	}
}

// One event of a watch longer than MaxWatchFrame ends the watch with an
// error, without the whole event read into memory: a hostile workload API
// server streams a 160 MiB event with no newline.
func TestWatchesRefuseHugeEvents(t *testing.T) {
	const huge = 160 << 20
	hostile := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"1"}}}` + "\n"))
		_, _ = w.Write([]byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"`))
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for i := 0; i < huge>>20; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}}}` + "\n"))
	}))
	defer hostile.Close()
	c := connectTo(t, hostile)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w, err := c.Core.CoreV1().ConfigMaps("x").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for ev := range w.ResultChan() {
		if ev.Type == "ERROR" {
			events = append(events, fmt.Sprintf("%s %v", ev.Type, ev.Object))
			w.Stop()
			break
		}
		events = append(events, string(ev.Type))
	}
	runtime.ReadMemStats(&after)
	if len(events) != 2 || events[0] != "ADDED" || !strings.Contains(events[1], "more than 16 MiB") {
		t.Errorf("events %v: want the first event, then the refusal", events)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 6*MaxWatchFrame {
		t.Errorf("reading the huge event allocated %d MiB", got>>20)
	}
}

// connectTo connects to a stand-in API server as the workload cluster.
func connectTo(t *testing.T, srv *httptest.Server) *Cluster {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c, err := FromRESTConfig(context.Background(), "workload", "test", &rest.Config{Host: srv.URL, BearerToken: "clearly-fake-token",
		TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
