package membus_test

import (
	"context"
	"testing"

	"github.com/noetl/gcpengine/shared/bus/bustest"
	"github.com/noetl/gcpengine/shared/bus/membus"
	"github.com/noetl/gcpengine/shared/sign"
)

// TestPublisherConformance holds the in-memory publisher to the bus
// contract the Pub/Sub driver passes (shared/bus/pubsubbus).
func TestPublisherConformance(t *testing.T) {
	signer, err := sign.Parse("bustest-key-0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	bustest.Run(t, func(t *testing.T) bustest.Harness {
		p := &membus.Publisher{Signer: signer}
		return bustest.Harness{Publisher: p, Signer: signer,
			Received: func(_ context.Context, topic bustest.Topic, _ int) ([]bustest.Message, error) {
				var out []bustest.Message
				for _, m := range p.Messages(string(topic)) {
					out = append(out, bustest.Message{Data: m.Data, Attributes: m.Attributes})
				}
				return out, nil
			}}
	})
}
