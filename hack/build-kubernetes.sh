#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler at a pinned
# Kubernetes version from the Go module proxy into bin/k8s/<version>/.
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
STAMP="${VERSION} $(recipe_hash "${BASH_SOURCE[0]}" "${ROOT}/hack/lib.sh")"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler)
FILES=()
for b in "${BINARIES[@]}"; do FILES+=("k8s/${VERSION}/${b}"); done

if cached "${NAME}" "${STAMP}"; then
  install_from_cache "${NAME}" "${FILES[@]}"
  exit 0
fi

log "building Kubernetes ${VERSION} (${BINARIES[*]}); this takes several minutes once per machine"
WORK="$(gomod_dir "${NAME}")"
cd "${WORK}"

go mod download -json "k8s.io/kubernetes@${VERSION}" > download.json
UPSTREAM_GOMOD="$(sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p' download.json)"
[[ -f "${UPSTREAM_GOMOD}" ]] || { log "no go.mod for k8s.io/kubernetes@${VERSION}"; exit 1; }
GO_DIRECTIVE="$(sed -n 's/^go \(.*\)$/\1/p' "${UPSTREAM_GOMOD}" | head -n1)"

{
  printf 'module eksa-metrics.invalid/testbed/kubernetes\n\ngo %s\n\n' "${GO_DIRECTIVE}"
  printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "${VERSION}"
  # "k8s.io/api => ./staging/src/k8s.io/api" becomes "k8s.io/api => k8s.io/api v0.36.3"
  sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*$#\t\1 => \1 '"${STAGING}"'#p' "${UPSTREAM_GOMOD}"
  printf ')\n'
} > go.mod
printf 'package testbed\n' > doc.go

MAJOR_MINOR="${VERSION#v}"; MAJOR="${MAJOR_MINOR%%.*}"; MINOR="$(cut -d. -f2 <<<"${MAJOR_MINOR}")"
LDFLAGS=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X ${pkg}.gitVersion=${VERSION} -X ${pkg}.gitMajor=${MAJOR} -X ${pkg}.gitMinor=${MINOR}"
  LDFLAGS+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done

mkdir -p "${CACHE}/${NAME}/k8s/${VERSION}"
for b in "${BINARIES[@]}"; do
  log "go build k8s.io/kubernetes/cmd/${b}@${VERSION}"
  go build -mod=mod -trimpath -ldflags "-s -w ${LDFLAGS}" \
    -o "${CACHE}/${NAME}/k8s/${VERSION}/${b}" "k8s.io/kubernetes/cmd/${b}"
done
printf '%s' "${STAMP}" > "${CACHE}/${NAME}.stamp"
install_from_cache "${NAME}" "${FILES[@]}"
log "Kubernetes ${VERSION} ready in bin/k8s/${VERSION}"
