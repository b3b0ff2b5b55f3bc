package fleet

import (
	"fmt"
	"strings"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/store"
)

// Damaged records. A stored document that does not decode (a changed
// byte; a disk or a restore that went wrong in a way bbolt's page checks
// do not see) is one record lost, never the service: lists skip it and
// name it (its collection and key, api.Damaged), the API lists it with
// its key and what is wrong (api.Device.Damaged, api.Rollout.Damaged,
// api.BundleInfo.Damaged, api.TrainJob.Damaged, api.WindowList.Damaged),
// trit_fleet_damaged_records counts them by collection (metrics.go; the
// windows recounted at most every damagedWindowsEvery, windows.go),
// the console's overview raises a device, rollout or bundle, incoming
// messages of a device whose record is damaged are dropped and counted
// while the other devices' go on, and `tritctl devices forget` deletes a
// damaged device record. What a damaged record held is not guessed at:
// the device reappears as new once its record is forgotten (its command
// counter restored from the highest sequence it reports). A document
// derived from others — the windows' count, a label source's
// acknowledgement point (windows.go, labelsource.go) — is recounted or
// asked for again instead, and logged; one that is not derived — the
// training jobs' counter — is a 409 naming it, never guessed at.

// DamagedAlert is the console's sentence about damaged records, "" for
// none: bad named (the first five), and windows, a count of the field
// windows that do not decode (DamagedJobsAndWindows: too many to list).
func DamagedAlert(bad []api.Damaged, windows int) string {
	n := len(bad) + windows
	if n == 0 {
		return ""
	}
	names := make([]string, 0, min(len(bad), 5)+1)
	for _, d := range bad[:min(len(bad), 5)] {
		names = append(names, d.Collection+" "+fault.Clip(d.Key, 64))
	}
	if len(bad) > 5 {
		names = append(names, fmt.Sprintf("%d more", len(bad)-5))
	}
	switch {
	case windows == 1:
		names = append(names, "1 field window (tritctl retrain status names it)")
	case windows > 1:
		names = append(names, fmt.Sprintf("%d field windows (tritctl retrain status names them)", windows))
	}
	what := "records do not decode and are skipped"
	if n == 1 {
		what = "record does not decode and is skipped"
	}
	return fmt.Sprintf("%d stored %s: %s. Delete a damaged device record with tritctl devices forget ID; restore a backup for others.",
		n, what, strings.Join(names, ", "))
}

// DamagedJobsAndWindows returns the training job records that do not
// decode and how many stored field windows do not (damagedWindows: counted
// again at most once a minute, or by any listing).
func (s *Service) DamagedJobsAndWindows() ([]api.Damaged, int, error) {
	var jobs []api.Damaged
	if err := s.db.View(func(tx store.Tx) error { var err error; _, jobs, err = loadTrainJobs(tx); return err }); err != nil {
		return nil, 0, err
	}
	windows, err := s.damagedWindows()
	return jobs, windows, err
}

// only is forEach over the documents whose key begins with prefix: a
// collection's records, without the documents beside them (a counter).
func only(forEach func(store.Collection, func(string, []byte) error) error, prefix string) func(store.Collection, func(string, []byte) error) error {
	return func(coll store.Collection, fn func(string, []byte) error) error {
		return forEach(coll, func(key string, raw []byte) error {
			if !strings.HasPrefix(key, prefix) {
				return nil
			}
			return fn(key, raw)
		})
	}
}
