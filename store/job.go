package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trit-iot/trit/wire"
)

// Job is the idempotency record of one deployment command, identified by
// rollout ID and sequence number. Its states are the protocol's: the
// agent records the state of each job event it sends.
type Job struct {
	RolloutID string
	Seq       uint64
	State     wire.JobState
	Reason    string    // why the job is in State, for humans
	Time      time.Time // when State was entered; zero means now on PutJob
}

// jobRecord is the stored JSON form of a Job; the identity is in the key.
type jobRecord struct {
	State  wire.JobState `json:"state"`
	Reason string        `json:"reason,omitempty"`
	Time   time.Time     `json:"time"`
}

// checkRolloutID bounds rollout IDs by the protocol's limit, which also
// keeps job keys far below bbolt's key size limit.
func checkRolloutID(id string) error {
	if id == "" || len(id) > wire.MaxRolloutIDLen || bytes.IndexByte([]byte(id), 0) >= 0 {
		return fmt.Errorf("rollout ID %q: want 1..%d bytes without NUL: %w", id, wire.MaxRolloutIDLen, ErrInvalid)
	}
	return nil
}

// jobKey is the rollout ID, a 0x00 separator and the big-endian sequence.
func jobKey(rolloutID string, seq uint64) []byte {
	k := make([]byte, 0, len(rolloutID)+9)
	k = append(k, rolloutID...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// jobKeyString renders a job key for error messages.
func jobKeyString(rolloutID string, seq uint64) string {
	return rolloutID + "/" + strconv.FormatUint(seq, 10)
}

// decodeJob decodes and validates a stored job key and value.
func decodeJob(k, v []byte) (Job, error) {
	if len(k) < 10 || k[len(k)-9] != 0 {
		return Job{}, corrupt(bucketJobs, fmt.Sprintf("%q", k), errors.New("malformed job key"))
	}
	j := Job{RolloutID: string(k[:len(k)-9]), Seq: binary.BigEndian.Uint64(k[len(k)-8:])}
	name := jobKeyString(j.RolloutID, j.Seq)
	if err := checkRolloutID(j.RolloutID); err != nil {
		return Job{}, corrupt(bucketJobs, name, err)
	}
	var r jobRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return Job{}, corrupt(bucketJobs, name, err)
	}
	if !r.State.Valid() {
		return Job{}, corrupt(bucketJobs, name, fmt.Errorf("unknown job state %q", r.State))
	}
	j.State, j.Reason, j.Time = r.State, r.Reason, r.Time
	return j, nil
}

// Job returns the record of job (rolloutID, seq), or ErrNotFound.
func (db *DB) Job(rolloutID string, seq uint64) (Job, error) {
	if err := checkRolloutID(rolloutID); err != nil {
		return Job{}, fmt.Errorf("store: job: %w", err)
	}
	var j Job
	err := db.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketJobs)
		if err != nil {
			return err
		}
		k := jobKey(rolloutID, seq)
		v := b.Get(k)
		if v == nil {
			return ErrNotFound
		}
		j, err = decodeJob(k, v)
		return err
	})
	if err != nil {
		return Job{}, fmt.Errorf("store: job %s: %w", jobKeyString(rolloutID, seq), err)
	}
	return j, nil
}

// PutJob records job j. A job in a terminal state is final: writing the same
// terminal state again is a no-op that keeps the first record, writing any
// other state is ErrJobFinished.
func (db *DB) PutJob(j Job) error {
	name := jobKeyString(j.RolloutID, j.Seq)
	if err := checkRolloutID(j.RolloutID); err != nil {
		return fmt.Errorf("store: put job: %w", err)
	}
	if !j.State.Valid() {
		return fmt.Errorf("store: put job %s: state %q: %w", name, j.State, ErrInvalid)
	}
	if j.Time.IsZero() {
		j.Time = time.Now().UTC()
	}
	v, err := json.Marshal(jobRecord{State: j.State, Reason: j.Reason, Time: j.Time})
	if err != nil {
		return fmt.Errorf("store: put job %s: %w", name, err)
	}
	err = db.essential(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketJobs)
		if err != nil {
			return err
		}
		k := jobKey(j.RolloutID, j.Seq)
		if old := b.Get(k); old != nil {
			prev, err := decodeJob(k, old)
			if err != nil {
				return err
			}
			if prev.State.Terminal() {
				if prev.State == j.State {
					return nil
				}
				return fmt.Errorf("stored state %s: %w", prev.State, ErrJobFinished)
			}
		}
		if err := b.Put(k, v); err != nil {
			return err
		}
		return raiseHighestJobSeq(tx, j.Seq)
	})
	if err != nil {
		return fmt.Errorf("store: put job %s: %w", name, err)
	}
	return nil
}

// Jobs returns all job records, ordered by rollout ID then sequence.
func (db *DB) Jobs() ([]Job, error) {
	var jobs []Job
	err := db.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketJobs)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			j, err := decodeJob(k, v)
			if err != nil {
				return err
			}
			jobs = append(jobs, j)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: jobs: %w", err)
	}
	return jobs, nil
}

// highestJobSeq returns the stored highest job sequence, or, in a database
// written before it was kept, the highest sequence among the jobs (a scan).
func highestJobSeq(tx *bolt.Tx) (seq uint64, stored bool, err error) {
	d, err := bucket(tx, bucketDevice)
	if err != nil {
		return 0, false, err
	}
	if v := d.Get(keyHighestJobSeq); v != nil {
		seq, err = decodeU64(bucketDevice, string(keyHighestJobSeq), v)
		return seq, true, err
	}
	b, err := bucket(tx, bucketJobs)
	if err != nil {
		return 0, false, err
	}
	err = b.ForEach(func(k, v []byte) error {
		j, err := decodeJob(k, v)
		if err != nil {
			return err
		}
		seq = max(seq, j.Seq)
		return nil
	})
	return seq, false, err
}

// raiseHighestJobSeq stores max(stored, seq) as the highest job sequence.
func raiseHighestJobSeq(tx *bolt.Tx, seq uint64) error {
	cur, stored, err := highestJobSeq(tx)
	if err != nil {
		return err
	}
	if stored && cur >= seq {
		return nil
	}
	d, err := bucket(tx, bucketDevice)
	if err != nil {
		return err
	}
	return d.Put(keyHighestJobSeq, u64Bytes(max(cur, seq)))
}

// HighestJobSeq returns the highest sequence number of any job ever
// recorded with PutJob, including jobs PruneJobs deleted since; 0 if none.
// It reads one key, so a per-command check does not scan the job table.
func (db *DB) HighestJobSeq() (uint64, error) {
	var seq uint64
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		seq, _, err = highestJobSeq(tx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: highest job sequence: %w", err)
	}
	return seq, nil
}

// PruneJobs deletes terminal jobs whose Time is before t and returns how
// many it deleted; it keeps the job table from growing over months. It
// never deletes the job with the highest sequence number: that is the job
// of the device's latest (retained) command, which is delivered again on
// every connection and must still be recognised as done. HighestJobSeq is
// unaffected by pruning.
func (db *DB) PruneJobs(before time.Time) (int, error) {
	n := 0
	err := db.essential(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketJobs)
		if err != nil {
			return err
		}
		highest, stored, err := highestJobSeq(tx)
		if err != nil {
			return err
		}
		if !stored {
			if err := raiseHighestJobSeq(tx, highest); err != nil {
				return err
			}
		}
		var doomed [][]byte
		err = b.ForEach(func(k, v []byte) error {
			j, err := decodeJob(k, v)
			if err != nil {
				return err
			}
			if j.State.Terminal() && j.Time.Before(before) && j.Seq != highest {
				doomed = append(doomed, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(doomed)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune jobs: %w", err)
	}
	return n, nil
}
