// Package docker holds throttler's container image (Dockerfile), the
// compose files of a broker, workers, a schema registry, Prometheus and
// Grafana, and their configs. Its tests check what can be checked
// without a Docker engine: the compose files and the Dockerfile hold what
// the run needs, the workers' configs validate, the dashboards query
// metrics the worker exports (integration/container_test.go runs the
// suite on a container broker where an engine answers). It holds no Go
// API.
package docker
