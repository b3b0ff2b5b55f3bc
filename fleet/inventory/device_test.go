package inventory

import (
	"testing"

	"github.com/trit-iot/trit/wire"
)

// The record of sent commands is bounded (the latest maxSent), and a
// record written before it existed falls back to the command counter: an
// event names a job the fleet may have sent only if its sequence is at
// most the counter.
func TestSentJobsRecord(t *testing.T) {
	var d Device
	for seq := uint64(1); seq <= maxSent+2; seq++ {
		d.LastSeq = seq
		d.NoteSent("r", seq)
	}
	if len(d.Sent) != maxSent || d.Sent[0].Seq != 3 || d.Sent[maxSent-1].Seq != maxSent+2 {
		t.Fatalf("sent %+v, want the latest %d", d.Sent, maxSent)
	}
	for _, c := range []struct {
		rollout string
		seq     uint64
		want    bool
	}{{"r", 3, true}, {"r", maxSent + 2, true}, {"r", 2, false}, {"other", 5, false}, {"r", maxSent + 3, false}} {
		if got := d.sentJob(c.rollout, c.seq); got != c.want {
			t.Errorf("sentJob(%s, %d) = %v, want %v", c.rollout, c.seq, got, c.want)
		}
	}

	legacy := Device{}
	legacy.LastSeq = 5
	now := testNow
	if !legacy.ApplyEvent(&wire.Event{Rollout: "old", Seq: 5, State: wire.JobSucceeded, Time: now.UnixMilli()}, now) ||
		legacy.LastJob == nil || legacy.LastJob.Seq != 5 {
		t.Fatalf("legacy record: an event within the counter not taken: %+v", legacy.LastJob)
	}
	for range 2 { // re-sent until acknowledged: counted once
		if legacy.ApplyEvent(&wire.Event{Rollout: "old", Seq: 1017, State: wire.JobRejected, Code: wire.CodeCommandSignature, Time: now.UnixMilli()}, now) {
			t.Fatal("legacy record: an event above the counter taken")
		}
	}
	if legacy.LastJob.Seq != 5 || legacy.ForeignJobs != 1 || legacy.LastForeignJob.Seq != 1017 {
		t.Fatalf("legacy record: last job %+v, foreign %d %+v", legacy.LastJob, legacy.ForeignJobs, legacy.LastForeignJob)
	}
}
