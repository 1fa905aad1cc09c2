// Package suggest finds, for a name nobody defined, the known name it
// most likely misspells: the "did you mean" of the DSL's errors (step,
// arc, task and kind names, task and step keys) and of the template
// checker's (filters).
package suggest

// Nearest returns the name among names nearest to name by EditDistance, when that distance is below 3 and at most half
// the length of name (so "x" suggests nothing, and "ftp" not "http"); the
// first of equals in names' order; "" when none is that near. Names longer than 64 bytes are
// compared for equality only.
func Nearest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := EditDistance(name, n); d < bestD && 2*d <= len(name) {
			best, bestD = n, d
		}
	}
	return best
}

// EditDistance is the edit distance of a and b in bytes: insertions,
// deletions, substitutions and transpositions of two adjacent bytes each
// count 1 (optimal string alignment, so "nxet" is 1 from "next" and 2
// from "set"); 64 for two different strings when either is longer than
// 64 bytes.
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	// d[i][j] is the distance of a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+c)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
