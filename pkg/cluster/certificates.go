package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	certutil "k8s.io/client-go/util/cert"

	"github.com/eksa-metrics/eksa-metrics/pkg/certs"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// CertificateStep is one Secret or ConfigMap of the serving certificates
// (tls.certificates: eksa-metrics): the CA, a proxy's serving certificate,
// or the CA bundle published for the scrapers. They are not rendered (no
// private key is ever written to a file); apply makes them before the
// objects, so that the proxy pods find them.
type CertificateStep struct {
	Kind, Namespace, Name string
	Action                Action // Create, Update or Unchanged
	// Why says what the step does, for the plan: "new CA", "renew: ...".
	Why string
	// Expires is when the live serving certificate expires (zero for a new one).
	Expires time.Time
	// RenewAt is when the serving certificate, as it is after this step, is
	// due for renewal (zero for the CA and the bundle).
	RenewAt time.Time

	// Pending: cert-manager has yet to issue it (tls.certificates:
	// cert-manager); apply waits for it after writing the Certificates.
	Pending bool
	// AfterObjects: the step replaces a Secret that cert-manager issued from
	// eksa-metrics' Certificate of that name (tls.certificates was
	// cert-manager), so it is written after the objects, once that
	// Certificate is pruned: before, cert-manager would issue over it again.
	AfterObjects bool
	// Reissue: a Secret apply wrote, deleted before the objects (a Prune
	// step) so that cert-manager issues its own in its place.
	Reissue bool

	secret    *corev1.Secret
	configMap *corev1.ConfigMap
	uid       types.UID // of a Prune step's object
	// restarts names the DaemonSet whose pods read the certificate only when
	// they start (HAProxy): a renewal restarts them, recording serial (the
	// certificate they then read) on their pod template.
	restarts, serial string
}

// Pending reports whether a step waits for cert-manager.
func Pending(steps []*CertificateStep) bool {
	return slices.ContainsFunc(steps, func(s *CertificateStep) bool { return s.Pending })
}

// NextRenewal is the earliest time one of the serving certificates is due
// for renewal (zero when there are none): the controller plans again then.
func NextRenewal(steps []*CertificateStep) time.Time {
	times := make([]time.Time, len(steps))
	for i, s := range steps {
		times[i] = s.RenewAt
	}
	return Earliest(times)
}

// Earliest is the earliest of times that is not zero (zero when all are).
func Earliest(times []time.Time) time.Time {
	var next time.Time
	for _, t := range times {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

func (s *CertificateStep) String() string {
	return fmt.Sprintf("%s %s/%s", s.Kind, s.Namespace, s.Name)
}

// PlanCertificates reads the certificates' Secrets and ConfigMaps and says
// what apply must write: a CA when there is none, a serving certificate per
// proxy when it is missing or due for renewal (certs.Renewal), and the CA
// bundle where the scrapers read it. An object of those names that
// eksa-metrics did not write (no CertificateLabel) is an error: it is never
// overwritten. New keys are made here, in memory only. With cert-manager
// issuing them (planIssued), apply writes only the bundles and restarts.
//
// The Secrets and ConfigMaps apply wrote that the spec no longer needs (a
// proxy or a scraper namespace gone, the CA when nothing is served) are
// deleted after the objects (Prune steps; DeleteStaleCertificates).
func (c *Cluster) PlanCertificates(ctx context.Context, cfg *spec.Config, now time.Time) ([]*CertificateStep, error) {
	served, err := c.served(ctx, cfg)
	if err != nil {
		return nil, err
	}
	stale, err := c.planStale(ctx, cfg, served)
	if err != nil {
		return stale, err
	}
	var steps []*CertificateStep
	var kubeletCA []byte
	if cfg.KubeletServingCertificates {
		ca, step, err := c.planCA(ctx, templates.KubeletServingCA, "kubelet-ca", "the CA of the kubelets' serving certificates, which the kubelet approver signs them with")
		if err != nil {
			return nil, err
		}
		if step != nil {
			steps = append(steps, step)
		}
		kubeletCA = ca.Cert
	}
	if len(served) == 0 {
		if kubeletCA == nil {
			return stale, nil
		}
		bundles, err := c.planBundles(ctx, cfg, nil, kubeletCA, "")
		return append(append(steps, bundles...), stale...), err
	}
	if cfg.CertManager {
		issued, err := c.planIssued(ctx, cfg, served, kubeletCA)
		return append(append(steps, issued...), stale...), err
	}

	ca, caStep, err := c.planCA(ctx, templates.ServingCA, "ca", "the CA of the proxies' serving certificates")
	if err != nil {
		return nil, err
	}
	if caStep != nil {
		steps = append(steps, caStep)
	}
	for _, sv := range served {
		ns, name, dns := sv.Namespace, sv.Name, sv.DNSName
		live, err := c.Core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		step := &CertificateStep{Kind: "Secret", Namespace: ns, Name: name, Action: Unchanged}
		switch {
		case apierrors.IsNotFound(err):
			step.Action, step.Why = Create, "serving certificate for "+dns
		case err != nil:
			return nil, fmt.Errorf("reading Secret %s/%s in the %s: %w", ns, name, c, err)
		case issuedForUs(live):
			// Left by tls.certificates: cert-manager: replaced once the
			// objects are applied, which prunes the Certificate that
			// would otherwise issue it again over apply's.
			step.Action, step.AfterObjects = Update, true
			step.Why = "serving certificate for " + dns + " from apply's CA, in place of the one cert-manager issued (written after the objects, once its Certificate is pruned)"
			step.secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: certLabels("serving"), ResourceVersion: live.ResourceVersion}, Type: corev1.SecretTypeTLS}
			if sv.HAProxy {
				step.restarts = templates.ControlPlaneDS
				step.Why += "; " + haproxyRestart
			}
		case !ours(live, "serving"):
			return nil, foreign("Secret", ns, name, c)
		default:
			if leaf, err := certutil.ParseCertsPEM(live.Data[corev1.TLSCertKey]); err == nil {
				step.Expires = leaf[0].NotAfter
				step.RenewAt = certs.RenewAt(leaf[0])
			}
			why := certs.Renewal(certs.Pair{Cert: live.Data[corev1.TLSCertKey], Key: live.Data[corev1.TLSPrivateKeyKey]}, ca, dns, now)
			if why == "" {
				steps = append(steps, step)
				continue
			}
			step.Action, step.Why = Update, "renew the serving certificate for "+dns+": "+why
			step.secret = live.DeepCopy()
			if sv.HAProxy {
				step.restarts = templates.ControlPlaneDS
				step.Why += "; " + haproxyRestart
			}
		}
		pair, err := certs.Issue(ca, dns, now)
		if err != nil {
			return nil, fmt.Errorf("issuing the serving certificate for %s: %w", dns, err)
		}
		leaf, err := certutil.ParseCertsPEM(pair.Cert)
		if err != nil {
			return nil, fmt.Errorf("reading the serving certificate issued for %s: %w", dns, err)
		}
		step.RenewAt = certs.RenewAt(leaf[0])
		step.serial = leaf[0].SerialNumber.Text(16)
		if step.secret == nil {
			step.secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: certLabels("serving")}, Type: corev1.SecretTypeTLS}
		}
		step.secret.Data = map[string][]byte{corev1.TLSCertKey: pair.Cert, corev1.TLSPrivateKeyKey: pair.Key}
		steps = append(steps, step)
	}

	bundles, err := c.planBundles(ctx, cfg, ca.Cert, kubeletCA, "")
	return append(append(steps, bundles...), stale...), err
}

// planStale: a Prune step for each Secret and ConfigMap of the
// certificates that apply wrote (its labels and field manager), or that
// cert-manager issued from eksa-metrics' Certificate of that name
// (issuedForUs), and the spec no longer needs.
func (c *Cluster) planStale(ctx context.Context, cfg *spec.Config, served []templates.ServedSecret) ([]*CertificateStep, error) {
	keep := templates.CertificateObjects(cfg, served)
	// cert-manager's Secrets follow the Certificates, which are rendered
	// for every serving certificate, installed controller or not.
	var keepIssued map[string]bool
	if cfg.CertManager {
		keepIssued = templates.CertificateObjects(cfg, templates.ServingSecrets(cfg))
	}
	sel := metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix + "," + templates.CertificateLabel}
	var steps []*CertificateStep
	for _, kind := range []string{"Secret", "ConfigMap"} {
		gvr := corev1.SchemeGroupVersion.WithResource(strings.ToLower(kind) + "s")
		items, err := c.listAll(ctx, c.Dynamic.Resource(gvr), gvr, sel)
		if err != nil {
			return nil, fmt.Errorf("listing the %ss of the serving certificates in the %s: %w", kind, c, err)
		}
		for i := range items {
			it := &items[i]
			name := templates.ObjectName(kind, it.GetNamespace(), it.GetName())
			if keep[name] {
				continue
			}
			why := "apply wrote it for the serving certificates, and the spec no longer needs it"
			switch {
			case ours(it, ""):
			case kind == "Secret" && issuedForUs(it) && !keepIssued[name]:
				why = "cert-manager issued it from eksa-metrics' Certificate of that name (pruned by this apply), and the spec no longer needs it"
			default:
				continue
			}
			steps = append(steps, &CertificateStep{Kind: kind, Namespace: it.GetNamespace(), Name: it.GetName(), Action: Prune, uid: it.GetUID(), Why: why})
		}
	}
	return steps, nil
}

// DeleteStaleCertificates deletes the Prune steps' Secrets and ConfigMaps
// (only those planned: their UIDs). The engine calls it after the objects,
// so that no proxy that still mounts one loses it before it is gone.
func (c *Cluster) DeleteStaleCertificates(ctx context.Context, steps []*CertificateStep, dryRun bool, report Reporter) error {
	for _, s := range steps {
		if s.Action != Prune || s.Reissue {
			continue
		}
		if err := c.deleteCertificateObject(ctx, s, dryRun, report); err != nil {
			return err
		}
	}
	return nil
}

// deleteCertificateObject deletes a Prune step's Secret or ConfigMap, the
// one planned (its UID) only.
func (c *Cluster) deleteCertificateObject(ctx context.Context, s *CertificateStep, dryRun bool, report Reporter) error {
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.uid}}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var err error
	if s.Kind == "Secret" {
		err = c.Core.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, opts)
	} else {
		err = c.Core.CoreV1().ConfigMaps(s.Namespace).Delete(ctx, s.Name, opts)
	}
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s in the %s: %w", s, c, err)
	}
	verb := "deleted"
	if dryRun {
		verb += " (server dry run)"
	}
	report.emit(Event{Cluster: c.String(), Object: s.String(), Action: verb, Message: s.Why})
	return nil
}

// served are the Secrets of the serving certificates (templates.ServingSecrets)
// without those of management controllers that are not installed: a
// controller that is not installed gets no edit, so no certificate.
func (c *Cluster) served(ctx context.Context, cfg *spec.Config) ([]templates.ServedSecret, error) {
	var out []templates.ServedSecret
	for _, sv := range templates.ServingSecrets(cfg) {
		if sv.Deployment != "" {
			if _, err := c.Core.AppsV1().Deployments(sv.Namespace).Get(ctx, sv.Deployment, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("reading Deployment %s/%s in the %s: %w", sv.Namespace, sv.Deployment, c, err)
			}
		}
		out = append(out, sv)
	}
	return out, nil
}

const haproxyRestart = "HAProxy reads it at start, so its pods restart one node at a time"

// planBundles: the CA bundle (caCert: one CA, or with cert-manager every
// namespace's; nil when no proxy serves a certificate) and, apart under
// KubeletCAKey, the kubelet-serving CA, in every namespace a scraper reads
// them from; pending, with nothing to write, while cert-manager has not
// issued every CA yet (awaiting says which).
func (c *Cluster) planBundles(ctx context.Context, cfg *spec.Config, caCert, kubeletCA []byte, awaiting string) ([]*CertificateStep, error) {
	data := map[string]string{}
	if caCert != nil {
		data[templates.CABundleKey] = string(caCert)
	}
	if kubeletCA != nil {
		data[templates.KubeletCAKey] = string(kubeletCA)
	}
	var steps []*CertificateStep
	for _, ns := range templates.BundleNamespaces(cfg) {
		step := &CertificateStep{Kind: "ConfigMap", Namespace: ns, Name: templates.ServingCA, Action: Unchanged}
		live, err := c.Core.CoreV1().ConfigMaps(ns).Get(ctx, templates.ServingCA, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			step.Action, step.Why = Create, "the CA bundle for the scrapers"
			step.configMap = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: templates.ServingCA, Namespace: ns, Labels: certLabels("bundle")}}
		case err != nil:
			return nil, fmt.Errorf("reading ConfigMap %s/%s in the %s: %w", ns, templates.ServingCA, c, err)
		case !ours(live, "bundle"):
			return nil, foreign("ConfigMap", ns, templates.ServingCA, c)
		case awaiting == "" && maps.Equal(live.Data, data):
			steps = append(steps, step)
			continue
		default:
			step.Action, step.Why = Update, "the CA bundle differs from the CAs"
			step.configMap = live.DeepCopy()
		}
		if awaiting != "" {
			step.Pending, step.configMap = true, nil
			step.Why += ", once cert-manager has issued " + awaiting
		} else {
			step.configMap.Data = data
		}
		steps = append(steps, step)
	}
	return steps, nil
}

// planIssued plans tls.certificates: cert-manager. cert-manager issues and
// renews each namespace's CA and the serving certificates from the Issuers
// and Certificates eksa-metrics renders; apply publishes the CA bundle (the
// CAs of every namespace that serves a certificate, concatenated in the
// order of their namespaces) from the CAs' Secrets and restarts HAProxy when
// its certificate changed. A Secret of those names that neither cert-manager
// issued for eksa-metrics' Certificate nor apply wrote is an error:
// cert-manager would overwrite it.
func (c *Cluster) planIssued(ctx context.Context, cfg *spec.Config, served []templates.ServedSecret, kubeletCA []byte) ([]*CertificateStep, error) {
	var steps []*CertificateStep
	var bundle []byte
	var awaiting []string
	for _, ns := range templates.IssuerNamespaces(served) {
		step := &CertificateStep{Kind: "Secret", Namespace: ns, Name: templates.IssuerCA, Action: Unchanged}
		live, err := c.Core.CoreV1().Secrets(ns).Get(ctx, templates.IssuerCA, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			step.Action, step.Pending = Create, true
			step.Why = "cert-manager issues the CA of the serving certificates in " + ns + " (Certificate " + ns + "/" + templates.IssuerCA + ", from Issuer " + templates.SelfSignedIssuer + " there)"
			awaiting = append(awaiting, "Secret "+ns+"/"+templates.IssuerCA)
		case err != nil:
			return nil, fmt.Errorf("reading Secret %s/%s in the %s: %w", ns, templates.IssuerCA, c, err)
		case !issuedFor(live, templates.IssuerCA, "Issuer", templates.SelfSignedIssuer):
			return nil, notIssued(ns, templates.IssuerCA, c)
		default:
			if err := certs.CheckCA(certs.Pair{Cert: live.Data[corev1.TLSCertKey], Key: live.Data[corev1.TLSPrivateKeyKey]}); err != nil {
				return nil, fmt.Errorf("Secret %s/%s in the %s, which cert-manager issued as eksa-metrics' CA, does not hold a usable CA: %v", ns, templates.IssuerCA, c, err)
			}
			pem := live.Data[corev1.TLSCertKey]
			bundle = append(bundle, pem...)
			if len(pem) > 0 && pem[len(pem)-1] != '\n' {
				bundle = append(bundle, '\n')
			}
		}
		steps = append(steps, step)
	}
	if len(awaiting) > 0 {
		bundle = nil // published whole, once every CA is there
	}

	// The annotations HAProxy's pod template records (read once; nil while
	// the DaemonSet does not exist: its pods will read the certificate
	// there is).
	var restarted map[string]string
	haproxyDS := false
	if slices.ContainsFunc(served, func(sv templates.ServedSecret) bool { return sv.HAProxy }) {
		ds, err := c.Core.AppsV1().DaemonSets(templates.SystemNS).Get(ctx, templates.ControlPlaneDS, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading DaemonSet %s/%s in the %s: %w", templates.SystemNS, templates.ControlPlaneDS, c, err)
		default:
			restarted, haproxyDS = ds.Spec.Template.Annotations, true
		}
	}

	for _, sv := range served {
		step := &CertificateStep{Kind: "Secret", Namespace: sv.Namespace, Name: sv.Name, Action: Unchanged}
		issued := "cert-manager issues the serving certificate for " + sv.DNSName + " (Certificate " + sv.Namespace + "/" + sv.Name + ")"
		live, err := c.Core.CoreV1().Secrets(sv.Namespace).Get(ctx, sv.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			step.Action, step.Why, step.Pending = Create, issued, true
		case err != nil:
			return nil, fmt.Errorf("reading Secret %s/%s in the %s: %w", sv.Namespace, sv.Name, c, err)
		case issuedFor(live, sv.Name, "Issuer", templates.CAIssuer):
			leaf, err := certutil.ParseCertsPEM(live.Data[corev1.TLSCertKey])
			if err != nil {
				return nil, fmt.Errorf("reading the certificate cert-manager issued in Secret %s/%s in the %s: %w", sv.Namespace, sv.Name, c, err)
			}
			step.Expires, step.RenewAt = leaf[0].NotAfter, certs.RenewAt(leaf[0])
			if serial := leaf[0].SerialNumber.Text(16); sv.HAProxy && haproxyDS && restarted[restartAnnotation(sv.Name)] != serial {
				step.Action, step.Why = Update, "cert-manager issued a new certificate for "+sv.DNSName+"; "+haproxyRestart
				step.restarts, step.serial = templates.ControlPlaneDS, serial
			}
		case issuedFor(live, sv.Name, "ClusterIssuer", templates.CAIssuer):
			// From the ClusterIssuer eksa-metrics rendered before its
			// issuers were namespaced (apply prunes it): cert-manager
			// issues it again from the Issuer of its namespace, because
			// the Secret's issuer annotations no longer match.
			step.Action, step.Why, step.Pending = Update, issued+", in place of the one from ClusterIssuer "+templates.CAIssuer, true
		case ours(live, ""):
			// apply's own, from tls.certificates: eksa-metrics. cert-manager
			// would adopt a valid certificate it finds there (and mark it
			// as its own issuer's), so apply deletes it before the
			// Certificate is written, and cert-manager issues a new one.
			step.Action, step.Pending, step.Reissue, step.uid = Prune, true, true, live.UID
			step.Why = "apply deletes the one it issued, so that " + issued
		default:
			return nil, notIssued(sv.Namespace, sv.Name, c)
		}
		steps = append(steps, step)
	}
	bundles, err := c.planBundles(ctx, cfg, bundle, kubeletCA, strings.Join(awaiting, ", "))
	return append(steps, bundles...), err
}

// issuedFor: cert-manager issued the Secret for the Certificate of that
// name, from the issuer of that kind and name (its annotations; an Issuer is
// the one in the Secret's namespace).
func issuedFor(s metav1.Object, certificate, kind, issuer string) bool {
	a := s.GetAnnotations()
	return a[templates.CertManagerCertificateAnnotation] == certificate && a["cert-manager.io/issuer-name"] == issuer && a["cert-manager.io/issuer-kind"] == kind
}

// issuedForUs: cert-manager issued the Secret from eksa-metrics'
// Certificate of the same name (the labels that Certificate's
// secretTemplate sets, and cert-manager's annotations naming that
// Certificate and one of eksa-metrics' issuers). Only such a Secret, and
// those apply wrote, does apply ever replace or delete.
func issuedForUs(s metav1.Object) bool {
	l := s.GetLabels()
	return l[templates.ManagedByLabel] == templates.Prefix && l[templates.CertificateLabel] == "cert-manager" &&
		(issuedByCertManager(s, s.GetName()) || issuedFor(s, s.GetName(), "Issuer", templates.SelfSignedIssuer))
}

// issuedByCertManager: cert-manager issued the serving certificate's Secret
// for eksa-metrics' Certificate, from its CA Issuer, or from the CA
// ClusterIssuer of before (which a cluster may still hold until it is
// issued again).
func issuedByCertManager(s metav1.Object, certificate string) bool {
	return issuedFor(s, certificate, "Issuer", templates.CAIssuer) || issuedFor(s, certificate, "ClusterIssuer", templates.CAIssuer)
}

func notIssued(ns, name string, c *Cluster) error {
	return fmt.Errorf("Secret %s/%s in the %s was neither issued by cert-manager for eksa-metrics' Certificate of that name nor written by eksa-metrics, and cert-manager would overwrite it: rename or remove it yourself, or set spec.tls.certificates: none", ns, name, c)
}

func restartAnnotation(secret string) string { return templates.CertificateLabel + "-" + secret }

// planCA returns a CA of eksa-metrics' (Secret name in kube-system, of
// role: ServingCA or KubeletServingCA), a new one (with its step, why) when
// there is none.
func (c *Cluster) planCA(ctx context.Context, name, role, why string) (certs.Pair, *CertificateStep, error) {
	live, err := c.Core.CoreV1().Secrets(templates.SystemNS).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		ca, err := certs.NewCA(name)
		if err != nil {
			return certs.Pair{}, nil, err
		}
		return ca, &CertificateStep{Kind: "Secret", Namespace: templates.SystemNS, Name: name, Action: Create, Why: why,
			secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: templates.SystemNS, Labels: certLabels(role)}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: ca.Cert, corev1.TLSPrivateKeyKey: ca.Key}}}, nil
	case err != nil:
		return certs.Pair{}, nil, fmt.Errorf("reading Secret %s/%s in the %s: %w", templates.SystemNS, name, c, err)
	case !ours(live, role):
		return certs.Pair{}, nil, foreign("Secret", templates.SystemNS, name, c)
	}
	ca := certs.Pair{Cert: live.Data[corev1.TLSCertKey], Key: live.Data[corev1.TLSPrivateKeyKey]}
	if err := certs.CheckCA(ca); err != nil {
		return certs.Pair{}, nil, fmt.Errorf("Secret %s/%s in the %s does not hold a usable CA (%v): eksa-metrics does not replace a CA by itself; delete the Secret to have apply make a new one (every certificate it signed is then replaced)", templates.SystemNS, name, c, err)
	}
	return ca, nil, nil
}

// ExecuteCertificates writes the steps that create or update, in order
// (the CA first), except those that come AfterObjects. With dryRun the API
// server checks each request and persists nothing.
func (c *Cluster) ExecuteCertificates(ctx context.Context, steps []*CertificateStep, dryRun bool, report Reporter) error {
	return c.executeCertificates(ctx, steps, false, dryRun, report)
}

// FinishCertificates runs after the objects: it writes the steps that come
// AfterObjects, then deletes the Prune steps' Secrets and ConfigMaps.
func (c *Cluster) FinishCertificates(ctx context.Context, steps []*CertificateStep, dryRun bool, report Reporter) error {
	if err := c.executeCertificates(ctx, steps, true, dryRun, report); err != nil {
		return err
	}
	return c.DeleteStaleCertificates(ctx, steps, dryRun, report)
}

func (c *Cluster) executeCertificates(ctx context.Context, steps []*CertificateStep, afterObjects, dryRun bool, report Reporter) error {
	var opts []string
	if dryRun {
		opts = []string{metav1.DryRunAll}
	}
	for _, s := range steps {
		var err error
		switch {
		case s.Reissue && !afterObjects:
			if err := c.deleteCertificateObject(ctx, s, dryRun, report); err != nil {
				return err
			}
			continue
		case s.Action == Unchanged, s.Action == Prune, s.Pending, s.AfterObjects != afterObjects:
			continue
		case s.secret == nil && s.configMap == nil: // a restart only
		case s.configMap != nil && s.Action == Create:
			// Where the ServiceMonitors go, apply creates the namespace too.
			if err = c.ensureNamespace(ctx, s.Namespace, dryRun); errors.Is(err, errNamespaceDryRun) {
				report.emit(Event{Cluster: c.String(), Object: s.String(), Action: "skipped", Message: "not validated: its namespace does not exist yet, and a server dry run cannot create it"})
				continue
			}
			if err == nil {
				_, err = c.Core.CoreV1().ConfigMaps(s.Namespace).Create(ctx, s.configMap, metav1.CreateOptions{DryRun: opts, FieldManager: FieldManager})
			}
		case s.secret != nil && s.Action == Create:
			_, err = c.Core.CoreV1().Secrets(s.Namespace).Create(ctx, s.secret, metav1.CreateOptions{DryRun: opts, FieldManager: FieldManager})
		case s.secret != nil:
			_, err = c.Core.CoreV1().Secrets(s.Namespace).Update(ctx, s.secret, metav1.UpdateOptions{DryRun: opts, FieldManager: FieldManager})
		default:
			_, err = c.Core.CoreV1().ConfigMaps(s.Namespace).Update(ctx, s.configMap, metav1.UpdateOptions{DryRun: opts, FieldManager: FieldManager})
		}
		if err != nil {
			return fmt.Errorf("writing %s in the %s: %w", s, c, err)
		}
		if s.secret != nil || s.configMap != nil {
			verb := map[Action]string{Create: "created", Update: "configured"}[s.Action]
			report.emit(Event{Cluster: c.String(), Object: s.String(), Action: verb, Message: s.Why})
		}
		if s.restarts != "" && !dryRun {
			if err := c.restart(ctx, s.restarts, s.Name, s.serial); err != nil {
				return err
			}
			report.emit(Event{Cluster: c.String(), Object: templates.ObjectName("DaemonSet", templates.SystemNS, s.restarts), Action: "restarted",
				Message: "to serve the new certificate of " + s.String()})
		}
	}
	return nil
}

// restart rolls a DaemonSet's pods (as kubectl rollout restart does) by an
// annotation on its pod template that names the renewed Secret and the
// serial number of the certificate it holds, under a field manager of its
// own. A DaemonSet that does not exist yet starts with the new certificate
// anyway.
func (c *Cluster) restart(ctx context.Context, ds, secret, serial string) error {
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, restartAnnotation(secret), serial)
	_, err := c.Core.AppsV1().DaemonSets(templates.SystemNS).Patch(ctx, ds, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager + "-certificates"})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restarting DaemonSet %s/%s for its renewed certificate in the %s: %w", templates.SystemNS, ds, c, err)
	}
	return nil
}

func certLabels(role string) map[string]string {
	return map[string]string{templates.ManagedByLabel: templates.Prefix, templates.CertificateLabel: role}
}

// ours: eksa-metrics wrote it (its labels, and its field manager in the
// object's managed fields: labels alone can be copied).
func ours(o metav1.Object, role string) bool {
	l := o.GetLabels()
	return l[templates.ManagedByLabel] == templates.Prefix && (role == "" || l[templates.CertificateLabel] == role) && writtenBy(o)
}

func writtenBy(o metav1.Object) bool {
	for _, mf := range o.GetManagedFields() {
		if mf.Manager == FieldManager {
			return true
		}
	}
	return false
}

func foreign(kind, ns, name string, c *Cluster) error {
	return fmt.Errorf("%s %s/%s in the %s was not written by eksa-metrics (it lacks the label %s) or not by its field manager, so apply does not overwrite it: rename or remove it yourself, or set spec.tls.certificates: none",
		kind, ns, name, c, templates.CertificateLabel)
}

// DeleteCertificates deletes the serving certificates' Secrets and CA
// bundles eksa-metrics wrote in this cluster (those with its labels and
// field manager), and the Secrets cert-manager issued from its Certificates
// (issuedForUs; the caller deletes those Certificates first).
func (c *Cluster) DeleteCertificates(ctx context.Context) error {
	sel := metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix + "," + templates.CertificateLabel}
	secrets, err := c.listAll(ctx, c.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("secrets")), corev1.SchemeGroupVersion.WithResource("secrets"), sel)
	if err != nil {
		return fmt.Errorf("listing the serving certificates in the %s: %w", c, err)
	}
	for _, s := range secrets {
		if !ours(&s, "") && !issuedForUs(&s) {
			continue
		}
		uid := s.GetUID()
		err := c.Core.CoreV1().Secrets(s.GetNamespace()).Delete(ctx, s.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %s/%s in the %s: %w", s.GetNamespace(), s.GetName(), c, err)
		}
	}
	cms, err := c.listAll(ctx, c.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")), corev1.SchemeGroupVersion.WithResource("configmaps"), sel)
	if err != nil {
		return fmt.Errorf("listing the CA bundles in the %s: %w", c, err)
	}
	for _, cm := range cms {
		if !ours(&cm, "") {
			continue
		}
		uid := cm.GetUID()
		err := c.Core.CoreV1().ConfigMaps(cm.GetNamespace()).Delete(ctx, cm.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ConfigMap %s/%s in the %s: %w", cm.GetNamespace(), cm.GetName(), c, err)
		}
	}
	return nil
}
