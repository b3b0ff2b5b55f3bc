// Package all registers every source kind of the sensors tree: import it
// for its side effect.
//
//	import _ "github.com/trit-iot/trit/sensors/all"
package all

import (
	// Each package registers its kinds with sensors.Register in init.
	_ "github.com/trit-iot/trit/sensors/ads1115"
	_ "github.com/trit-iot/trit/sensors/adxl345"
	_ "github.com/trit-iot/trit/sensors/bmxx80"
	_ "github.com/trit-iot/trit/sensors/gpio"
	_ "github.com/trit-iot/trit/sensors/replay"
	_ "github.com/trit-iot/trit/sensors/synthetic"
)
