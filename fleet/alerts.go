package fleet

// DriftAlert returns the drift score at or above which a device is
// reported drifting (fleet.toml [alerts] drift); 0: no alert. The web
// console shows it beside each score.
func (s *Service) DriftAlert() float64 { return s.opt.DriftAlert }

// TwoPerson reports whether the two-person rule is on ([rollouts]
// two_person): the console offers emergency rollbacks only then.
func (s *Service) TwoPerson() bool { return s.opt.TwoPerson }

// UnknownAlert returns the share of an interval's windows reported
// unknown at or above which a device is uncertain ([alerts] unknown); 0:
// no alert.
func (s *Service) UnknownAlert() float64 { return s.opt.UnknownAlert }
