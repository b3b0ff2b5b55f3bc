package inventory

import (
	"fmt"
	"sort"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// The inventory's reads and an operator's writes to it (forget, reset),
// over the store: the API and the console read device records here, not
// from the store. A record that does not decode is named, never the end
// of a list (fault.ErrDamaged; package fleet's damaged.go).

// Devices returns every device record that decodes, sorted by ID
// (All also names those that do not).
func Devices(db store.Database) ([]Device, error) {
	out, _, err := All(db)
	return out, err
}

// All returns every device record that decodes, sorted by ID, and the
// records that do not, in key order.
func All(db store.Database) ([]Device, []api.Damaged, error) {
	var out []Device
	bad, err := fault.DecodeAll(db.ForEach, store.FleetDevices, func(_ string, d *Device) { out = append(out, *d) })
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, bad, err
}

// DeviceList is GET /v1/devices: the records that decode, then an entry
// per damaged record with its key as ID and Damaged set.
func DeviceList(db store.Database) ([]Device, error) {
	out, bad, err := All(db)
	for _, b := range bad {
		out = append(out, Device{Device: api.Device{ID: b.Key, Damaged: b.Error}})
	}
	return out, err
}

// DeviceByID returns one device record; a damaged one is ErrDamaged.
func DeviceByID(db store.Database, id string) (*Device, error) {
	if err := wire.CheckID(id); err != nil {
		return nil, fmt.Errorf("%w: device ID: %v", fault.ErrBadRequest, err)
	}
	var d Device
	ok, err := db.Get(store.FleetDevices, id, &d)
	if fault.IsDamaged(err) {
		return nil, fault.Damaged(store.FleetDevices, id, err)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: device %s", fault.ErrNotFound, id)
	}
	return &d, nil
}

// Select returns the IDs of the devices matching selector, sorted.
func Select(db store.Database, selector map[string]string) ([]string, error) {
	all, err := Devices(db)
	if err != nil {
		return nil, err
	}
	var ids []string
	for i := range all {
		if all[i].Matches(selector) {
			ids = append(ids, all[i].ID)
		}
	}
	return ids, nil
}

// ForgetDevice deletes a device's record: for a gateway taken out of
// service, or a record that holds data a device never sent (a forged
// state), with its health history. If the device says anything again it
// reappears as new, its command counter restored from the highest
// sequence its state reports.
func ForgetDevice(db store.Database, id string) error {
	if err := wire.CheckID(id); err != nil {
		return fmt.Errorf("%w: device ID: %v", fault.ErrBadRequest, err)
	}
	err := db.Update(func(tx store.Tx) error {
		var d Device
		ok, err := tx.Get(store.FleetDevices, id, &d)
		switch {
		case fault.IsDamaged(err): // its health keys are unknown: look for them
			if err := forgetHealthOf(tx, id); err != nil {
				return err
			}
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("%w: device %s", fault.ErrNotFound, id)
		default:
			if err := forgetHealth(tx, &d); err != nil {
				return err
			}
		}
		return tx.Delete(store.FleetDevices, id)
	})
	return err
}

// ResetDevice makes a device's record accept the next state the device
// publishes, whatever its session and instance: for a record pinned by a
// state no real connection will supersede (a forged session number). The
// record shows the device offline until then; its labels, models, job and
// command counter are kept.
func ResetDevice(db store.Database, id string) (*Device, error) {
	if err := wire.CheckID(id); err != nil {
		return nil, fmt.Errorf("%w: device ID: %v", fault.ErrBadRequest, err)
	}
	var d Device
	err := db.Update(func(tx store.Tx) error {
		ok, err := tx.Get(store.FleetDevices, id, &d)
		if fault.IsDamaged(err) {
			return fault.Damaged(store.FleetDevices, id, err)
		}
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: device %s", fault.ErrNotFound, id)
		}
		d.Session, d.Instance, d.Online = 0, "", false
		d.StateClock, d.ModelClock = 0, 0 // a forged clock pins nothing either
		return tx.Put(store.FleetDevices, id, &d)
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// Stored reads a device record by its key as it is, without checking the
// key as a device ID (the console shows a record stored under any key);
// a key with no record is fault.ErrNotFound.
func Stored(db store.Database, key string) (*Device, error) {
	var d Device
	ok, err := db.Get(store.FleetDevices, key, &d)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: device %q", fault.ErrNotFound, key)
	}
	return &d, nil
}
