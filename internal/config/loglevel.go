package config

import (
	"fmt"
	"log/slog"
)

// LogLevel reads a log_level value: debug, info, warn or error; "" is
// info. The programs check it when they load their file, so that a typo
// is refused rather than logged at the wrong level.
func LogLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("%q: want debug, info, warn or error", s)
}
