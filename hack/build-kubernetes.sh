#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler and the
# test bed's hollow node (hack/hollow-node: the real kubelet and kube-proxy
# servers over kubemark's fake runtime) at a pinned Kubernetes version from the
# Go module proxy into bin/k8s/<version>/, with one `go build` so that the
# packages they share compile once.
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod
# replaces every k8s.io/* staging module with ./staging/src/... . We write a
# scratch module that requires k8s.io/kubernetes and replaces each of those
# staging modules with the matching published v0.x version instead.
#
# usage: hack/build-kubernetes.sh v1.36.3
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${1:?usage: $0 vX.Y.Z}"
STAGING="v0.${VERSION#v1.}"
NAME="kubernetes-${VERSION}"
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh" "${ROOT}"/hack/hollow-node/*.go)"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler hollow-node)
FILES=()
for b in "${BINARIES[@]}"; do FILES+=("k8s/${VERSION}/${b}"); done
begin_build "${NAME}" "${STAMP}" "${FILES[@]}"
log "building Kubernetes ${VERSION} (${BINARIES[*]})"
upstream k8s.io/kubernetes "${VERSION}"
{
  printf 'module eksa-metrics.invalid/testbed/kubernetes\n\ngo %s\n\n' "${GO_DIRECTIVE}"
  printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "${VERSION}"
  # "k8s.io/api => ./staging/src/k8s.io/api" becomes "k8s.io/api => k8s.io/api v0.36.3"
  sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*$#\t\1 => \1 '"${STAGING}"'#p' "${UPSTREAM_GOMOD}"
  printf ')\n'
} > go.mod
mkdir -p cmd/hollow-node
cp "${ROOT}"/hack/hollow-node/*.go cmd/hollow-node/

MAJOR_MINOR="${VERSION#v}"; MAJOR="${MAJOR_MINOR%%.*}"; MINOR="$(cut -d. -f2 <<<"${MAJOR_MINOR}")"
# The kubelet of 1.37 and later takes cAdvisor's lib/model types
# (hack/hollow-node/cadvisor_model.go), older ones info/v1 and info/v2.
TAGS=""
(( MINOR >= 37 )) && TAGS="cadvisormodel"
LDFLAGS=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X ${pkg}.gitVersion=${VERSION} -X ${pkg}.gitMajor=${MAJOR} -X ${pkg}.gitMinor=${MINOR}"
  LDFLAGS+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done
mkdir -p "${OUT}/k8s/${VERSION}"
go build -mod=mod -trimpath -tags "${TAGS}" -ldflags "-s -w ${LDFLAGS}" -o "${OUT}/k8s/${VERSION}/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler ./cmd/hollow-node
finish_build "${NAME}" "${STAMP}" "${FILES[@]}"
