package meter

import (
	"sort"
	"strings"
)

// PriceTable is the unit price in USD of each metered operation, with the
// instance shape the function prices assume.
type PriceTable struct {
	// Source and Date say where the prices come from.
	Source, Date string
	// PerOp is the price of one operation (or one byte, for *_bytes).
	PerOp map[string]float64
	// FunctionInvocation is the price of one function invocation.
	FunctionInvocation float64
	// VCPUSecond and GiBSecond price the handler time of an instance with
	// VCPU vCPUs and MemoryGiB of memory.
	VCPUSecond, GiBSecond float64
	VCPU, MemoryGiB       float64
}

// Prices are Google Cloud list prices (USD, no free tier, no committed-use
// discount) for the deployment Terraform describes: Firestore Standard
// edition in a regional location (us-central1), Pub/Sub message delivery
// basic, Cloud Tasks, Cloud Functions gen2 (Cloud Run request-based
// billing, tier-1 region, 1 vCPU / 512 MiB instances) and GCS Standard.
// The function time is priced as the sum of handler durations: an instance
// serving concurrent requests bills one active period for them, and the
// 100 ms rounding of an idle-to-busy period is not attributed to any one
// execution.
var Prices = PriceTable{
	Source: "cloud.google.com/{firestore,pubsub,tasks,run,storage}/pricing (list prices)",
	Date:   "2026-11",
	PerOp: map[string]float64{
		FirestoreRead:   0.03 / 100_000,
		FirestoreWrite:  0.09 / 100_000,
		FirestoreDelete: 0.01 / 100_000,
		// Pub/Sub: $40 per TiB of publish and of subscribe throughput,
		// at least 1,000 bytes per request (counted in the *_bytes ops).
		PubSubPublishBytes:  40.0 / (1 << 40),
		PubSubDeliveryBytes: 40.0 / (1 << 40),
		// Cloud Tasks: $0.40 per million billable operations (API calls
		// and push delivery attempts).
		TasksCreate:   0.40 / 1_000_000,
		TasksDispatch: 0.40 / 1_000_000,
		TasksDelete:   0.40 / 1_000_000,
		// GCS Standard: class A $0.005 per 1,000, class B $0.0004 per 1,000.
		GCSClassA: 0.005 / 1000,
		GCSClassB: 0.0004 / 1000,
	},
	FunctionInvocation: 0.40 / 1_000_000,
	VCPUSecond:         0.000024,
	GiBSecond:          0.0000025,
	VCPU:               1,
	MemoryGiB:          0.5,
}

// Line is one priced line of a cost report.
type Line struct {
	Service string  `json:"service"`
	Kind    string  `json:"kind"`
	Count   float64 `json:"count"`
	USD     float64 `json:"usd"`
}

// Price prices counted operations: one line per operation name (service =
// the part before the first dot), sorted, and the total in USD.
func (t PriceTable) Price(ops map[string]float64) ([]Line, float64) {
	var lines []Line
	var total float64
	for op, n := range ops {
		service, kind, _ := strings.Cut(op, ".")
		var usd float64
		switch {
		case service == "functions" && strings.HasSuffix(kind, ".invocations"):
			usd = n * t.FunctionInvocation
		case service == "functions" && strings.HasSuffix(kind, ".ms"):
			usd = n / 1000 * (t.VCPU*t.VCPUSecond + t.MemoryGiB*t.GiBSecond)
		default:
			usd = n * t.PerOp[op]
		}
		total += usd
		lines = append(lines, Line{Service: service, Kind: kind, Count: n, USD: usd})
	}
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].Service != lines[j].Service {
			return lines[i].Service < lines[j].Service
		}
		return lines[i].Kind < lines[j].Kind
	})
	return lines, total
}
