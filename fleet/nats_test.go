package fleet

import (
	"testing"

	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire/natstest"
)

// TestFleetOverNATSCluster runs TestFleetOverMosquitto's rollout on a
// three-node NATS cluster (JetStream, MQTT) with the fleet's state in
// PostgreSQL: trit-fleet on node 0, six devices spread over the three
// nodes. Commands, bundles (retained) and events cross the cluster.
func TestFleetOverNATSCluster(t *testing.T) {
	c := natstest.Start(t, 3)
	testFleetOver(t, pgtest.Database(t), c.Node(0).MQTTURL(), c.MQTTURLs())
}
