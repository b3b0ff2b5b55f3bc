package fleet

import (
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
)

// The inventory — the device records, what applies a device's messages
// to them, their health history, an operator's forget and reset — is
// package fleet/inventory's; the server and the console call it directly.
// These are the service's names for it, for its own callers and tests.

// Device is the inventory's device record (inventory.Device).
type Device = inventory.Device

// Devices is inventory.Devices.
func Devices(db store.Database) ([]Device, error) { return inventory.Devices(db) }

// Inventory is inventory.All.
func Inventory(db store.Database) ([]Device, []api.Damaged, error) { return inventory.All(db) }

// DeviceByID is inventory.DeviceByID.
func DeviceByID(db store.Database, id string) (*Device, error) { return inventory.DeviceByID(db, id) }

// Select is inventory.Select.
func Select(db store.Database, selector map[string]string) ([]string, error) {
	return inventory.Select(db, selector)
}

// ForgetDevice is inventory.ForgetDevice.
func ForgetDevice(db store.Database, id string) error { return inventory.ForgetDevice(db, id) }

// DeviceHealthHistory is inventory.DeviceHealthHistory.
func DeviceHealthHistory(db store.Database, id string, now time.Time) (*api.DeviceHealth, error) {
	return inventory.DeviceHealthHistory(db, id, now)
}

// SumHealthHistory is inventory.SumHealthHistory.
func SumHealthHistory(db store.Database, ids []string, now time.Time) (*api.GroupHealth, error) {
	return inventory.SumHealthHistory(db, ids, now)
}
