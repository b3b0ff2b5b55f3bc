// Package wire is trit's MQTT protocol, shared by trit-agent and trit-fleet:
// topic names, payload types, the signed deployment command, and strict
// decoders for everything that arrives from the network.
//
// docs/PROTOCOL.md is the specification; this package is its reference
// implementation. In short, under the prefix trit/v1/{fleet}/:
//
//	bundles/{sha256}          retained  QoS 1  fleet → devices   bundle bytes
//	devices/{id}/desired      retained  QoS 1  fleet → device    signed Command (JSON)
//	devices/{id}/state        retained  QoS 1  device → fleet    State (JSON; also the Last Will)
//	devices/{id}/events       -         QoS 1  device → fleet    Event (JSON)
//	devices/{id}/telemetry    -         QoS 1  device → fleet    Telemetry (JSON)
//	devices/{id}/acks         -         QoS 1  fleet → device    Ack (JSON)
//
// Every decoder checks a size cap before reading, rejects unknown fields and
// trailing data, validates every identifier, and returns a *DecodeError
// wrapping a sentinel (ErrTooLarge, ErrMalformed, ...). Commands are signed
// with Ed25519 over a canonical text encoding (Command.Canonical) that is
// rebuilt from the decoded fields, so what is verified is exactly what is
// used.
//
// The package imports the standard library and inference/bundle (for key
// IDs) only.
package wire
