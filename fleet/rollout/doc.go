// Package rollout is the fleet's rollout engine: one rollout's state and
// the rules that move it on — pace, retries, timeouts, the abort
// criterion, the shadow gates, the confidence gate and the two-person
// rule. It imports only api, wire and the standard library
// (internal/layering): it knows no store, no clock, no broker and no
// HTTP, so the service (package fleet) persists it, steps it and sends
// what it asks, and its tests need none of them.
//
// A rollout delivers one bundle to a fixed set of devices, in a paced order,
// and stops by itself when too many of them fail. It is a plain value: the
// service persists it as JSON after every change, so a restarted fleet
// resumes every rollout where it was. All decisions are made by Step and
// Apply from the rollout's own fields and the time passed in, so they are
// deterministic and testable without a clock or a broker.
//
// Invariants:
//   - Devices is fixed at creation; Order lists each of them once.
//   - A device is notified at most once per attempt; every notification gets
//     a new sequence number from the device's own counter, passed to Step (a
//     device refuses a command whose sequence is not above the last one it
//     saw, across rollouts), and reports carrying an older one are ignored.
//   - Once State is Aborted, Completed or Failed, Step notifies nobody.
//   - A rollout that ends with every device finished for good is Completed
//     if at least one device succeeded, Failed if none did; Reason then
//     counts the devices that did not succeed.
//   - A device that refuses a command as superseded, reporting a higher
//     sequence (the fleet's counter fell behind: a restored database), is
//     sent the command again with a sequence above it (Resend); that is
//     not a failure and uses no retry.
//   - A phase starts only when every device of the phases before it has
//     finished, and the abort check has passed: a canary phase that trips the
//     abort criterion keeps the bundle from every device outside it.
//   - The abort criterion is evaluated in one place, AbortStatus (abort.go):
//     Step aborts exactly when it says Met, and whoever shows a rollout
//     shows that evaluation.
//   - While an approval is pending, Step notifies at most Approval.After
//     devices (approval.go); a shadowing device is promoted only once every
//     shadowing device of its phase has passed the gates (shadow.go); a
//     canary device judged by the confidence gate succeeds only once it
//     has reported enough windows with the new model for the gate to
//     decide, at most api.DecideWindowsFactor times its MinWindows
//     (gate.go); an undecided device stays verifying or shadowing.
//   - Successes is the number of devices whose State is Succeeded.
//   - After Step, unless the rollout is done, no device is in progress
//     for longer than Timeout (but one waiting to be sent again), and its
//     abort criterion is not met — unless Step retried a device: the
//     criterion is checked before the retries, and a retried device no
//     longer counts as finished, so AbortStatus can read Met until the
//     next Step acts on it.
//   - Apply, ApplyShadow and ApplyTelemetry that return false change
//     nothing; a device waits to be sent again (Resend) only while
//     Notified, and at most maxResends times.
//   - Reports are still recorded once the rollout has ended (a late
//     success is a device that runs the bundle): Completed, Failed and
//     Reason are as of the end.
//   - A rollout read back from its JSON decides exactly as the one that
//     wrote it: a new leader resumes it where the last one stopped.
//
// Known exceptions, kept because changing them changes behaviour: a
// success reported after a device timed out is taken as it comes — a
// canary judged by the confidence gate then succeeds without being
// judged, and a shadowing device goes back to shadowing (later phases may
// have started).
//
// robust_test.go checks these invariants after every action of random,
// reproducible runs against a simulated fleet that loses, repeats and
// reorders messages, falls behind on sequences and changes leader.
//
// Files: rollout.go (the value, Step, Apply, pace and retries), abort.go
// (the abort criterion), shadow.go (shadow mode and its gates), gate.go
// (the confidence gate), approval.go (the two-person rule), errors.go.
package rollout
