package bus

// Waiting returns how many batches of an execution wait behind a publish
// in flight (the tests' view of the queue).
func (c *Coalescer) Waiting(executionID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, g := range c.groups {
		if k.executionID == executionID {
			n += len(g.queue)
		}
	}
	return n
}
