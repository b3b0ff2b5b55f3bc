package sensors

import "errors"

// OpenAll validates a list of sensor configs (ValidateAll) and opens each
// through OpenRetrying. The error is non-nil only for an invalid config; a
// sensor that does not answer starts failed and shows in its Health. Close
// the sources when done.
func OpenAll(cfgs []Config, env *Env, p *RetryPolicy) ([]*Retrying, error) {
	if len(cfgs) == 0 {
		return nil, &ConfigError{Field: "sensor", Msg: "no sensors configured (add a [[sensor]] table)"}
	}
	if err := ValidateAll(cfgs); err != nil {
		return nil, err
	}
	var out []*Retrying
	for _, c := range cfgs {
		r, err := OpenRetrying(c, env, p)
		if err != nil { // not reached after ValidateAll, but never leak
			CloseAll(out)
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// CloseAll closes every source and returns their errors joined.
func CloseAll(srcs []*Retrying) error {
	var errs []error
	for _, s := range srcs {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// Healths returns the Health of every source, in order, for the agent's
// state report.
func Healths(srcs []*Retrying) []Health {
	out := make([]Health, len(srcs))
	for i, s := range srcs {
		out[i] = s.Health()
	}
	return out
}
