package cluster

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
)

// RefuseRedirects wraps a transport to an API server so that a redirect is
// an error instead of a request sent on. A kube-apiserver never redirects
// its API clients, and Go's HTTP client follows a redirect with the
// request's credentials (a bearer token) and, for 307 and 308, its body:
// an API server, or whoever can write the server of a workload kubeconfig
// Secret, could send the controller's or the operator's token and a serving
// key to any address, plain HTTP too. Every client eksa-metrics builds
// (FromRESTConfig, the controller's own) goes through it. Nothing of the
// reply (its Location, its body) is kept.
func RefuseRedirects(next http.RoundTripper) http.RoundTripper { return refuseRedirects{next} }

type refuseRedirects struct{ next http.RoundTripper }

func (r refuseRedirects) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || resp.StatusCode < 300 || resp.StatusCode > 399 || resp.StatusCode == http.StatusNotModified {
		return resp, err
	}
	resp.Body.Close()
	return nil, &RedirectError{Server: req.URL.Scheme + "://" + req.URL.Host, Method: req.Method, Status: resp.StatusCode}
}

// WrappedRoundTripper lets client-go's debugging find the transport inside.
func (r refuseRedirects) WrappedRoundTripper() http.RoundTripper { return r.next }

// RedirectError is a redirect an API server answered with, refused.
type RedirectError struct {
	Server, Method string
	Status         int
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the API server at %s answered a %s with a redirect (HTTP %d), which a kube-apiserver never sends its API clients: refused, and nothing was sent on; check the server of the kubeconfig (for a workload cluster, the Secret eksa-system/<cluster>-kubeconfig)",
		safetext.Escape(e.Server), e.Method, e.Status)
}

// MaxReply is the largest reply eksa-metrics reads from an API server for
// one request other than a watch: a page of the lists it makes (500
// objects, label-selected) is a few MiB. A reply past it is refused while it
// is read, before it is held whole.
const MaxReply = 64 << 20

// LimitReplies wraps a transport to an API server so that a reply longer
// than MaxReply is an error: one API server (a hostile or broken workload
// cluster) could otherwise have the controller allocate what it sends, and
// stop every other Cluster's reconcile with the process. Watches, whose
// bodies are long-lived streams, are left to client-go's frame limits.
func LimitReplies(next http.RoundTripper) http.RoundTripper { return limitReplies{next} }

type limitReplies struct{ next http.RoundTripper }

func (l limitReplies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		// A watch streams for as long as it lasts: each of its JSON
		// frames (one event, ended by a newline) is bounded instead.
		// Protobuf frames are length-prefixed and bounded by client-go.
		if strings.Contains(resp.Header.Get("Content-Type"), "json") {
			resp.Body = &frameLimited{ReadCloser: resp.Body, err: &ReplyTooLargeError{Server: req.URL.Scheme + "://" + req.URL.Host, Method: "watch (one event)", Limit: MaxWatchFrame}}
		}
		return resp, nil
	}
	tooLarge := &ReplyTooLargeError{Server: req.URL.Scheme + "://" + req.URL.Host, Method: req.Method}
	if resp.ContentLength > MaxReply {
		resp.Body.Close()
		return nil, tooLarge
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: MaxReply, err: tooLarge}
	return resp, nil
}

func (l limitReplies) WrappedRoundTripper() http.RoundTripper { return l.next }

type limitedBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a reply of exactly MaxReply from a longer one.
		var one [1]byte
		if n, _ := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, b.err
		}
		return b.ReadCloser.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// ReplyTooLargeError is a reply longer than MaxReply, refused.
// MaxWatchFrame bounds one event of a watch: client-go's streaming decoder
// refuses a larger object anyway (apimachinery
// pkg/runtime/serializer/streaming, maxBytes), but its JSON framer reads
// the whole event first.
const MaxWatchFrame = 16 << 20

// frameLimited ends a JSON watch stream whose event runs past
// MaxWatchFrame bytes without the newline that ends each event.
type frameLimited struct {
	io.ReadCloser
	since int
	err   error
}

func (b *frameLimited) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		b.since = n - i - 1
	} else {
		b.since += n
	}
	if b.since > MaxWatchFrame {
		return 0, b.err
	}
	return n, err
}

// ReplyTooLargeError says a reply (or one event of a watch) was longer
// than Limit (MaxReply when 0).
type ReplyTooLargeError struct {
	Server, Method string
	Limit          int64
}

func (e *ReplyTooLargeError) Error() string {
	limit := e.Limit
	if limit == 0 {
		limit = MaxReply
	}
	return fmt.Sprintf("the API server at %s answered a %s with more than %d MiB, more than any reply eksa-metrics needs: refused", safetext.Escape(e.Server), e.Method, limit>>20)
}
