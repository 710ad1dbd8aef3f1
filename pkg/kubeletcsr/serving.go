package kubeletcsr

import (
	"crypto/tls"
	"sync"
	"time"

	"github.com/eksa-metrics/eksa-metrics/pkg/certs"
)

// Serving is the certificate of the approver's own metrics endpoint,
// issued in memory by the kubelet-serving CA for one DNS name (its
// Service's): the scrapers of its job trust that CA and that name only. A
// kubelet certificate can never pass for it (no name under .svc is ever
// approved), and it can never pass for a kubelet (kubelets are verified
// for their addresses; it names none). It is issued again when the CA
// changes or a third of its life is left, checked at most once a minute.
type Serving struct {
	CA   *CAFiles
	Name string

	mu      sync.Mutex
	pair    certs.Pair
	cert    *tls.Certificate
	checked time.Time
}

// GetCertificate is a tls.Config's GetCertificate.
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.cert != nil && now.Sub(s.checked) < time.Minute {
		return s.cert, nil
	}
	ca, err := s.CA.Load()
	if err != nil {
		if s.cert != nil {
			return s.cert, nil // the one issued last, until the CA reads again
		}
		return nil, err
	}
	s.checked = now
	if s.cert != nil && certs.Renewal(s.pair, ca, s.Name, now) == "" {
		return s.cert, nil
	}
	pair, err := certs.Issue(ca, s.Name, now)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(pair.Cert, pair.Key)
	if err != nil {
		return nil, err
	}
	s.pair, s.cert = pair, &cert
	return s.cert, nil
}
