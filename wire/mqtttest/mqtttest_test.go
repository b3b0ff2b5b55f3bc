package mqtttest

import (
	"net"
	"testing"
	"time"
)

func TestStartStopRestart(t *testing.T) {
	b := Start(t)
	dial := func() error {
		c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(); err != nil {
		t.Fatalf("broker not reachable: %v", err)
	}
	b.Stop()
	if err := dial(); err == nil {
		t.Fatal("broker still accepts connections after Stop")
	}
	b.Restart()
	if err := dial(); err != nil {
		t.Fatalf("broker not reachable after Restart: %v", err)
	}
}
