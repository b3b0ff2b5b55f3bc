// Package e2e holds end-to-end tests of the whole system: trit-fleet's
// service and real trit-agents (in this process) talking through a real
// Mosquitto started by the tests on a loopback port. It lives under cmd/
// because only the binaries' level may import both agent and fleet.
package e2e
