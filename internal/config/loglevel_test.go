package config

import (
	"log/slog"
	"testing"
)

func TestLogLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"": slog.LevelInfo, "debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if got, err := LogLevel(in); err != nil || got != want {
			t.Errorf("LogLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"Info", "warning", "trace"} {
		if _, err := LogLevel(in); err == nil {
			t.Errorf("LogLevel(%q): no error", in)
		}
	}
}
