package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
)

// Damaged records. A stored document that does not decode (a changed
// byte; a disk or a restore that went wrong in a way bbolt's page checks
// do not see) is one record lost, never the service: lists skip it and
// name it (its collection and key, api.Damaged), the API lists it with
// its key and what is wrong (api.Device.Damaged, api.Rollout.Damaged,
// api.BundleInfo.Damaged), the console's overview raises it, incoming
// messages of a device whose record is damaged are dropped and counted
// while the other devices' go on, and `tritctl devices forget` deletes a
// damaged device record. What a damaged record held is not guessed at:
// the device reappears as new once its record is forgotten (its command
// counter restored from the highest sequence it reports).

// ErrDamaged marks a record that exists but does not decode.
var ErrDamaged = errors.New("fleet: record damaged")

// isDamaged reports whether err from decoding a stored document means the
// document is damaged (its bytes are not the JSON of its type), not that
// the store failed.
func isDamaged(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.Is(err, store.ErrCorrupt) || errors.As(err, &syn) || errors.As(err, &typ) || errors.Is(err, ErrDamaged)
}

// damagedErr wraps a decode error of coll's document key as ErrDamaged,
// naming the record and what deletes it.
func damagedErr(coll store.Collection, key string, err error) error {
	return fmt.Errorf("%w: %s record %s does not decode (%s)%s", ErrDamaged, coll, Clip(key, 128), Clip(err.Error(), MaxLogField), remedy(coll, key))
}

// remedy says how an operator deletes a damaged record of coll.
func remedy(coll store.Collection, key string) string {
	switch coll {
	case store.FleetDevices:
		return "; delete it with tritctl devices forget " + Clip(key, 128)
	}
	return "; restore a backup (docs/FLEET.md \"Backup and restore\")"
}

// decodeAll decodes every document of coll into a fresh T, calls keep
// with each that decodes, and returns the ones that do not.
func decodeAll[T any](forEach func(store.Collection, func(string, []byte) error) error, coll store.Collection, keep func(key string, v *T)) ([]api.Damaged, error) {
	var bad []api.Damaged
	err := forEach(coll, func(key string, raw []byte) error {
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			bad = append(bad, api.Damaged{Collection: coll.String(), Key: key, Error: Clip(err.Error(), MaxLogField)})
			return nil
		}
		keep(key, v)
		return nil
	})
	return bad, err
}

// DamagedAlert is the console's sentence about damaged records, "" for
// none.
func DamagedAlert(bad []api.Damaged) string {
	if len(bad) == 0 {
		return ""
	}
	names := make([]string, 0, min(len(bad), 5))
	for _, d := range bad[:min(len(bad), 5)] {
		names = append(names, d.Collection+" "+Clip(d.Key, 64))
	}
	more := ""
	if len(bad) > 5 {
		more = fmt.Sprintf(" and %d more", len(bad)-5)
	}
	what := "records do not decode and are skipped"
	if len(bad) == 1 {
		what = "record does not decode and is skipped"
	}
	return fmt.Sprintf("%d stored %s: %s%s. Delete a damaged device record with tritctl devices forget ID; restore a backup for others.",
		len(bad), what, strings.Join(names, ", "), more)
}
