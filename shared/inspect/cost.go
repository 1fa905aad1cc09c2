package inspect

import (
	"sort"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/meter"
)

// Cost is GET /executions/{id}/cost: the cloud operations the
// execution's functions counted (shared/meter), priced at list prices.
type Cost struct {
	ExecutionID string `json:"execution_id"`
	// Steps counts step runs plus loop iterations.
	Steps int `json:"steps"`
	// Operations are the counts by service and kind ("firestore" →
	// {"read": n, ...}).
	Operations map[string]map[string]float64 `json:"operations"`
	// Lines are the priced operations, sorted by service and kind.
	Lines    []meter.Line `json:"lines"`
	USDTotal float64      `json:"usd_total"`
	// USDPer1000Steps is usd_total / steps × 1000 (0 without steps).
	USDPer1000Steps float64 `json:"usd_per_1000_steps"`
	PriceSource     string  `json:"price_source"`
	PriceDate       string  `json:"price_date"`
}

// CostOf prices ops, the metered operations of execution st (the sums
// of store.Store.OpsTotal), at meter.Prices.
func CostOf(st *engine.State, ops map[string]float64) Cost {
	steps := 0
	for _, ss := range st.Steps {
		if ss.Loop != nil {
			steps += ss.Loop.Total
		} else {
			steps += ss.Runs
		}
	}
	return costFor(st.ExecutionID, steps, ops)
}

// CostOfStatus is CostOf for an execution known by its status document
// (the same step count: loop iterations, else completed runs).
func CostOfStatus(st *Status, ops map[string]float64) Cost {
	steps := 0
	for _, ss := range st.Steps {
		if ss.Loop != nil {
			steps += ss.Loop.Total
		} else {
			steps += ss.Runs
		}
	}
	return costFor(st.ExecutionID, steps, ops)
}

// costFor prices the operations of an execution of steps steps.
func costFor(id string, steps int, ops map[string]float64) Cost {
	lines, total := meter.Prices.Price(ops)
	v := Cost{ExecutionID: id, Steps: steps, Operations: map[string]map[string]float64{}, Lines: lines, USDTotal: total,
		PriceSource: meter.Prices.Source, PriceDate: meter.Prices.Date}
	for _, l := range lines {
		if v.Operations[l.Service] == nil {
			v.Operations[l.Service] = map[string]float64{}
		}
		v.Operations[l.Service][l.Kind] = l.Count
	}
	if steps > 0 {
		v.USDPer1000Steps = total / float64(steps) * 1000
	}
	return v
}

// SortedLines returns c's lines, or, when it has none (an api that sends
// only operations), one unpriced line per operation; sorted by service
// then kind.
func (c Cost) SortedLines() []meter.Line {
	lines := append([]meter.Line(nil), c.Lines...)
	if len(lines) == 0 {
		for svc, kinds := range c.Operations {
			for k, n := range kinds {
				lines = append(lines, meter.Line{Service: svc, Kind: k, Count: n})
			}
		}
	}
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].Service != lines[j].Service {
			return lines[i].Service < lines[j].Service
		}
		return lines[i].Kind < lines[j].Kind
	})
	return lines
}
