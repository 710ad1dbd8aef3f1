package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// InsecureKubeconfigSecretsFlag is the flag of the CLI and of `controller
// run` that trusts kubeconfigs read from Secrets like the operator's own.
const InsecureKubeconfigSecretsFlag = "--insecure-kubeconfig-secrets"

// RefusedField is one field of a kubeconfig read from a Secret that would
// act on the machine reading it.
type RefusedField struct {
	// Entry is `user "name"` or `cluster "name"`.
	Entry string
	// Field is the kubeconfig's field name: exec, auth-provider, tokenFile,
	// certificate-authority, client-certificate, client-key.
	Field string
	// Why says what the field would make eksa-metrics do.
	Why string
}

func (f RefusedField) String() string { return fmt.Sprintf("%s sets %s (%s)", f.Entry, f.Field, f.Why) }

// KubeconfigRefusedError is a kubeconfig from a Secret that asks for a
// credential plugin or a local file. It is invalid input, not an unreachable
// cluster: the server is never contacted.
type KubeconfigRefusedError struct {
	// Source names the Secret, e.g. "Secret eksa-system/prod-kubeconfig on
	// the management cluster".
	Source  string
	Refused []RefusedField
}

func (e *KubeconfigRefusedError) Error() string {
	parts := make([]string, len(e.Refused))
	for i, f := range e.Refused {
		parts[i] = f.String()
	}
	return fmt.Sprintf("refusing the kubeconfig in %s: %s; whoever can write that Secret could otherwise run commands, or use the files and credentials, of the machine running eksa-metrics. "+
		"Write inline credentials into the Secret, as Cluster API does (certificate-authority-data, client-certificate-data and client-key-data, or token); "+
		"or, if you trust everyone who can write Secrets in eksa-system, pass %s",
		e.Source, strings.Join(parts, "; "), InsecureKubeconfigSecretsFlag)
}

// CheckSecretKubeconfig refuses what a kubeconfig read from a Secret must not
// ask for: exec and auth-provider plugins, which run code or use local
// credentials, tokenFile, which sends a local file (in a pod, its own
// ServiceAccount token) to the kubeconfig's server, and the file forms of the
// certificate authority and the client certificate and key. Inline data
// (certificate-authority-data, client-certificate-data, client-key-data,
// token, username and password) is accepted, and so are server, proxy-url,
// tls-server-name and insecure-skip-tls-verify: the Secret's writer chooses
// the server anyway, and those only decide where the Secret's own
// credentials go. source names the Secret.
//
// Every cluster and user the kubeconfig holds is checked, not only those of
// the selected context: the rule then does not depend on which context is
// selected (an override, a current-context the writer changes later), a
// reviewer reads it off the Secret at once, and Cluster API's kubeconfigs
// hold one context anyway, so nothing legitimate is lost.
func CheckSecretKubeconfig(cfg *clientcmdapi.Config, source string) error {
	var refused []RefusedField
	for _, name := range sortedKeys(cfg.Clusters) {
		c := cfg.Clusters[name]
		if c == nil {
			continue
		}
		if c.CertificateAuthority != "" {
			refused = append(refused, RefusedField{Entry: fmt.Sprintf("cluster %q", name), Field: "certificate-authority",
				Why: fmt.Sprintf("it would read the file %q of this machine", c.CertificateAuthority)})
		}
	}
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		if u == nil {
			continue
		}
		entry := fmt.Sprintf("user %q", name)
		if u.Exec != nil {
			refused = append(refused, RefusedField{Entry: entry, Field: "exec",
				Why: fmt.Sprintf("it would run the command %q on this machine", u.Exec.Command)})
		}
		if u.AuthProvider != nil {
			refused = append(refused, RefusedField{Entry: entry, Field: "auth-provider",
				Why: fmt.Sprintf("it would run the %q auth-provider plugin with this machine's credentials", u.AuthProvider.Name)})
		}
		if u.TokenFile != "" {
			refused = append(refused, RefusedField{Entry: entry, Field: "tokenFile",
				Why: fmt.Sprintf("it would send the file %q of this machine, such as a pod's ServiceAccount token, to the kubeconfig's server", u.TokenFile)})
		}
		if u.ClientCertificate != "" {
			refused = append(refused, RefusedField{Entry: entry, Field: "client-certificate",
				Why: fmt.Sprintf("it would present the file %q of this machine to the kubeconfig's server", u.ClientCertificate)})
		}
		if u.ClientKey != "" {
			refused = append(refused, RefusedField{Entry: entry, Field: "client-key",
				Why: fmt.Sprintf("it would sign with the key file %q of this machine", u.ClientKey)})
		}
	}
	if len(refused) > 0 {
		return &KubeconfigRefusedError{Source: source, Refused: refused}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
