package store

// The fleet's model health over time lives in the FleetHealth collection
// (schema 3): one document per device and UTC hour of minute points, and
// one per device and UTC day of hour points, so that recording a telemetry
// report rewrites two small documents and reading a device's last day and
// month reads 24 + 31 keys, never a scan. Package fleet (health.go) owns
// the documents' format and their bounds: it deletes a device's hour
// documents older than a day and its day documents older than 31 days as
// it writes new ones.

// HealthHourKey is the key of device's minute points of the UTC hour
// written as YYYYMMDDHH.
func HealthHourKey(device, hour string) string { return device + "/m/" + hour }

// HealthDayKey is the key of device's hour points of the UTC day written
// as YYYYMMDD.
func HealthDayKey(device, day string) string { return device + "/h/" + day }
