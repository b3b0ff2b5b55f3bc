// Package server is trit-fleet's process shell around the service
// (package fleet): the command line (cli.go, credentials_cli.go,
// operators_cli.go, backup.go), the configuration file (config.go), the
// broker adapters — paho for an MQTT broker (paho.go), the embedded broker
// (embedded.go, brokerauth.go, brokerlimit.go, brokerlog.go, limit.go,
// credentials.go) and the NATS feed (natsfeed.go) — and the HTTP API
// (api.go), on whose listener it mounts the web console (fleet/console).
// Serve puts them together; cmd/trit-fleet runs Main.
package server
