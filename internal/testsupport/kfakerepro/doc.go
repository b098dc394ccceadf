// Package kfakerepro holds standalone reproductions of bugs of kfake, the
// embedded broker of franz-go, that throttler works around. Its tests use
// only franz-go and kfake, so that they can be sent upstream as they are;
// each is skipped, with the reason, until the bug is fixed upstream
// (KFAKE_REPRO=1 runs them anyway, to show the bug).
package kfakerepro
