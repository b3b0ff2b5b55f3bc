package sensors

import (
	"fmt"

	"github.com/trit-iot/trit/sensors/features"
)

// CheckSpecRate reports whether a feature pipeline spec fits the sensor
// whose samples feed it: band energies are placed by the spec's rate, so a
// spec for 1 kHz fed at 100 Hz would compute every band at the wrong
// frequencies. primary is the sensor that paces the samples (the fastest
// of a Merge). A spec without a rate (statistics only) fits any sensor; a
// sensor without a rate (a replay read as fast as possible) is trusted to
// have been recorded at the spec's rate.
func CheckSpecRate(spec features.PipelineSpec, primary Config) error {
	eff, err := primary.Effective()
	if err != nil {
		return err
	}
	if spec.Rate == 0 || eff.Rate == 0 || spec.Rate == eff.Rate {
		return nil
	}
	return fmt.Errorf("sensors: the feature pipeline is for samples at %v Hz, but sensor %q (kind %s) samples at %v Hz; set its rate to %v",
		spec.Rate, eff.Name, eff.Kind, eff.Rate, spec.Rate)
}
