package cluster

import (
	"fmt"
	"net/http"

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
