#!/usr/bin/env bash
# Runs the tests of one Go package as shards in parallel: the test binary is
# compiled once (go test -c), then started once per filter, each process with
# its own log, printed when it ends. The integration tests mostly wait on API
# servers and controllers, so two shards take about the time of the longer
# one on two cores. Fails when any shard fails.
#
# usage: hack/test-shards.sh PACKAGE TIMEOUT FILTER...
#   FILTER: run=REGEXP (the tests it selects) or skip=REGEXP (every other)
set -euo pipefail

pkg=$1 timeout=$2
shift 2
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
go test -c -o "${work}/pkg.test" "${pkg}"
dir="$(go list -f '{{.Dir}}' "${pkg}")"

declare -A shard=()
n=0
for f in "$@"; do
  n=$((n + 1))
  case "${f}" in
    run=*) flag=-test.run ;;
    skip=*) flag=-test.skip ;;
    *) echo "test-shards: filter ${f}: want run=REGEXP or skip=REGEXP" >&2; exit 2 ;;
  esac
  ( cd "${dir}" && exec "${work}/pkg.test" -test.count=1 -test.timeout "${timeout}" "${flag}" "${f#*=}" ) >"${work}/${n}.log" 2>&1 &
  shard[$!]="${n} (${f})"
done

failed=0
started=${SECONDS}
while (( ${#shard[@]} > 0 )); do
  rc=0
  wait -n -p pid || rc=$?
  [[ -n "${pid:-}" && -n "${shard[${pid}]:-}" ]] || continue
  name=${shard[${pid}]}
  unset "shard[${pid}]"
  log="${work}/${name%% *}.log"
  if (( rc == 0 )); then
    printf 'ok\t%s shard %s\t%ds\n' "${pkg}" "${name}" $((SECONDS - started))
  else
    cat "${log}"
    printf 'FAIL\t%s shard %s\t%ds (exit %d)\n' "${pkg}" "${name}" $((SECONDS - started)) "${rc}"
    failed=1
  fi
done
exit "${failed}"
