// Package agent is trit-agent, the daemon on each gateway: it keeps an MQTT
// session with the fleet's broker, installs signed model bundles with a
// verified, atomic, self-checking install, runs inference on sensor data,
// and reports state, job events and telemetry through a bounded
// store-and-forward outbox.
//
// The pieces, one per file:
//
//	config.go    TOML configuration, validated at start-up
//	mqtt.go      the MQTT interface the agent consumes (Dialer, Conn)
//	paho.go      its implementation on eclipse/paho.mqtt.golang
//	session.go   connection supervisor: will, online state, subscriptions
//	publish.go   outbox drain and event acknowledgements
//	install.go   the install state machine
//	loop.go      the inference loop and its model slot
//	stats.go     rolling telemetry statistics
//	input.go     sensors → feature vectors
//	agent.go     wiring, Run, systemd notification
//	cli.go       the trit-agent command tree
//
// Everything persistent goes through package store; the protocol is package
// wire (docs/PROTOCOL.md); operations are in docs/OPERATIONS.md.
package agent
