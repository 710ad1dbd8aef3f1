#!/usr/bin/env bash
# Times whole eksa-metrics processes with /usr/bin/time -v and prints a table:
# start-up (version), generate on an example, generate -o kustomize, and
# validate over fleets of 500 and 1000 generated specs.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${ROOT}"
BINARY="${BIN}/eksa-metrics"
[[ -x "${BINARY}" ]] || { log "run make build first"; exit 1; }
TMP="$(mktemp -d)"
trap 'rm -rf "${TMP}"' EXIT

fleet() { # n dir
  mkdir -p "$2"
  for ((i = 0; i < $1; i++)); do
    sed "s/name: dev/name: store-${i}/g" examples/docker-bindaddress.yaml > "$2/store-${i}.yaml"
  done
}
fleet 500 "${TMP}/fleet500"
fleet 1000 "${TMP}/fleet1000"

measure() { # label command...
  local label=$1; shift
  local best="" rss=""
  for _ in 1 2 3; do
    /usr/bin/time -v -o "${TMP}/time" "$@" >/dev/null 2>"${TMP}/stderr" || true
    local wall; wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "${TMP}/time")
    local secs; secs=$(awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }' <<<"${wall}")
    if [[ -z "${best}" ]] || awk "BEGIN { exit !(${secs} < ${best}) }"; then best=${secs}; fi
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "${TMP}/time")
  done
  printf '| %-52s | %8.3f | %8d |\n' "${label}" "${best}" "$((rss / 1024))"
}

printf '| %-52s | %8s | %8s |\n' "command (best of 3)" "wall s" "max MiB"
printf '|%s|%s|%s|\n' "------------------------------------------------------" "----------" "----------"
measure "eksa-metrics version" "${BINARY}" version
measure "generate -f examples/docker-bindaddress.yaml" "${BINARY}" generate -f examples/docker-bindaddress.yaml
measure "generate -f examples/vsphere-management.yaml" "${BINARY}" generate -f examples/vsphere-management.yaml
measure "generate -o kustomize (vsphere-management)" "${BINARY}" generate -f examples/vsphere-management.yaml -o kustomize --output-dir "${TMP}/k" --force
measure "validate -f fleet of 500 specs" "${BINARY}" validate -f "${TMP}/fleet500" -o json
measure "validate -f fleet of 1000 specs" "${BINARY}" validate -f "${TMP}/fleet1000" -o json
measure "generate -f fleet of 1000 specs -o kustomize" "${BINARY}" generate -f "${TMP}/fleet1000" -o kustomize --output-dir "${TMP}/out" --force
