package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// printJSON writes an api body as indented JSON (the body as received
// when it does not parse).
func printJSON(w io.Writer, body []byte) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(body), "", "  "); err != nil {
		w.Write(body)
		if len(body) == 0 || body[len(body)-1] != '\n' {
			io.WriteString(w, "\n")
		}
		return
	}
	buf.WriteByte('\n')
	w.Write(buf.Bytes())
}

// printValue writes v as indented JSON.
func printValue(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Write(append(b, '\n'))
}

// table writes aligned columns (two spaces apart); cells are made one
// line.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = oneLine(c, 0)
		if cells[i] == "" {
			cells[i] = "-"
		}
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() { t.tw.Flush() }

// oneLine folds s into one line, cut to max runes (0 = no limit).
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if max > 0 {
		if r := []rune(s); len(r) > max {
			return string(r[:max-1]) + "…"
		}
	}
	return s
}

// fmtMS formats a duration in milliseconds ("" for none).
func fmtMS(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// fmtTime shortens a timestamp to seconds, UTC (the zero time is "").
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// fmtTimeText is fmtTime of an RFC 3339 text taken from an untyped JSON
// document (text that does not parse is shown as it is).
func fmtTimeText(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return fmtTime(t)
}

// str formats a decoded JSON value for a table cell.
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	default:
		return fmt.Sprint(x)
	}
}
