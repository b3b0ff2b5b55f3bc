package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/trit-iot/trit/fleet/fault"
)

// brokerLog adapts the service's logger for mochi-mqtt, whose listeners log
// every ended connection as a warning with an empty message, and whose
// packet errors print the whole packet struct (kilobytes of payload). A
// connection that ended the ordinary way (EOF, closed, reset, timed out)
// becomes a debug line that says so, any other ending an info line, as does
// a packet whose connection ended under it (at shutdown), and a packet is
// shown by its type, topic and size.
type brokerLog struct{ slog.Handler }

func newBrokerLog(log *slog.Logger) *slog.Logger { return slog.New(brokerLog{log.Handler()}) }

func (h brokerLog) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	var cause error
	r.Attrs(func(a slog.Attr) bool {
		switch v := a.Value.Any().(type) {
		case packets.Packet:
			a.Value = slog.StringValue(packetSummary(&v))
		case *packets.Packet:
			a.Value = slog.StringValue(packetSummary(v))
		case error:
			if a.Key == "error" {
				cause = v
			}
		}
		out.AddAttrs(a)
		return true
	})
	switch {
	case r.Message == "":
		out.Message, out.Level = "MQTT connection ended with an error", slog.LevelInfo
		if connectionEnded(cause) {
			out.Message, out.Level = "MQTT connection ended", slog.LevelDebug
		}
	case r.Message == "error processing packet" && cause != nil && connectionEnded(cause):
		// The connection closed under the packet: every client's does
		// when trit-fleet stops, which is no reason to warn.
		out.Message, out.Level = "MQTT packet not processed: its connection had ended", slog.LevelDebug
	}
	if !h.Handler.Enabled(ctx, out.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, out)
}

func (h brokerLog) WithAttrs(as []slog.Attr) slog.Handler {
	return brokerLog{h.Handler.WithAttrs(as)}
}

func (h brokerLog) WithGroup(name string) slog.Handler { return brokerLog{h.Handler.WithGroup(name)} }

// connectionEnded reports whether err is how connections ordinarily end.
func connectionEnded(err error) bool {
	var ne net.Error
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, mochi.ErrConnectionClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, packets.CodeDisconnect) ||
		errors.As(err, &ne) && ne.Timeout()
}

func packetSummary(pk *packets.Packet) string {
	name := packets.PacketNames[pk.FixedHeader.Type]
	if name == "" {
		name = fmt.Sprintf("packet type %d", pk.FixedHeader.Type)
	}
	if pk.TopicName != "" {
		return fmt.Sprintf("%s topic=%q payload=%d bytes", name, fault.Clip(pk.TopicName, 100), len(pk.Payload))
	}
	return name
}
