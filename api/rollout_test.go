package api

import (
	"strings"
	"testing"

	"github.com/trit-iot/trit/wire"
)

// Every job state of the protocol has its device state, under its own name
// in lower case, and ends the attempt exactly when it ends the job.
func TestDeviceStateOf(t *testing.T) {
	for _, j := range []wire.JobState{wire.JobQueued, wire.JobDownloading, wire.JobInstalling, wire.JobSucceeded, wire.JobFailed, wire.JobRejected} {
		s, ok := DeviceStateOf(j)
		if !ok || string(s) != strings.ToLower(string(j)) {
			t.Errorf("%s: %q, %v", j, s, ok)
		}
		if s.Finished() != j.Terminal() {
			t.Errorf("%s: Finished %v, Terminal %v", j, s.Finished(), j.Terminal())
		}
		if s.InProgress() == j.Terminal() {
			t.Errorf("%s: InProgress %v, Terminal %v", j, s.InProgress(), j.Terminal())
		}
	}
	if s, ok := DeviceStateOf("PAUSED"); ok || s != "" {
		t.Errorf("unknown job state: %q, %v", s, ok)
	}
}
