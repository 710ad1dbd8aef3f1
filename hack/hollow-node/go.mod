// The hollow node is built by hack/build-kubernetes.sh inside a scratch module
// that requires k8s.io/kubernetes at each test-bed version; this go.mod only
// keeps it out of the eksa-metrics module.
module eksa-metrics.invalid/testbed/hollow-node

go 1.26
