// Package services assembles the Q-IM server processes for cmd/qim: one command per service in
// start order, `qim all`, the environment check every command runs before anything starts, and
// the configuration reference docs/config.md, generated from the services' Config structs so
// that --help, the reference and the loader cannot drift apart.
//
// It imports every service package; no service imports it.
package services
