package wire

import "math"

// Clock is a device's own logical clock: it orders the states and job
// events one device instance (one agent database) makes, whatever order
// the broker, a fleet replica or a redelivery hands them over in. Its
// value is Boot·2³² + N: Boot is a number the agent takes from its
// durable session counter once at process start (store.NextSession; the
// process's first connection attempt uses it as its session), so every
// later process of the instance starts above every earlier one,
// and N counts the messages the process has stamped, from 1, in memory
// (no write per message). A process that stamps 2³² − 1 messages takes a
// new Boot. Zero means no clock (an agent before it, or a Last Will,
// which the session rule orders: docs/PROTOCOL.md "Device clock").
//
// Telemetry needs none: its (session, seq) is already unique and ordered
// per instance (Telemetry).
type Clock uint64

// ClockAt returns the clock value of message n of the process that
// reserved boot. n must be below 2³².
func ClockAt(boot uint64, n uint32) Clock { return Clock(boot<<32 | uint64(n)) }

// Boot is the process number of the clock (0: no clock).
func (c Clock) Boot() uint64 { return uint64(c) >> 32 }

// After reports whether c is later than d. Without a clock on either
// side nothing can be ordered, and c is taken as later: what receivers
// did before devices had clocks.
func (c Clock) After(d Clock) bool { return c == 0 || d == 0 || c > d }

// MaxClockBoot is the largest Boot a Clock holds.
const MaxClockBoot = math.MaxUint32
