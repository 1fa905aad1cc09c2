package results

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// failAfter fails every write after n bytes.
type failAfter struct {
	n   int
	buf bytes.Buffer
}

var errBroken = errors.New("broken pipe to the bucket")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.buf.Len()+len(p) > f.n {
		return 0, errBroken
	}
	return f.buf.Write(p)
}

// The writer goroutine hashes and writes every byte in order; a backend
// error reaches the encoder at its next Write or at Flush.
func TestHashWriter(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // 4.8 MB: several chunks
	var out bytes.Buffer
	h := sha256.New()
	hw := newHashWriter(&out, h)
	for p := data; len(p) > 0; {
		k := min(len(p), 7777)
		if _, err := hw.Write(p[:k]); err != nil {
			t.Fatal(err)
		}
		p = p[k:]
	}
	if err := hw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	if !bytes.Equal(out.Bytes(), data) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("bytes or digest differ (%d of %d bytes)", out.Len(), len(data))
	}
	if _, err := hw.Write([]byte("x")); err == nil {
		t.Fatal("a write after Flush was accepted")
	}

	fa := &failAfter{n: pipeChunk + 10}
	hw = newHashWriter(fa, sha256.New())
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		_, err = hw.Write(data[:pipeChunk])
		time.Sleep(time.Millisecond)
	}
	if ferr := hw.Flush(); !errors.Is(ferr, errBroken) || (err != nil && !errors.Is(err, errBroken)) {
		t.Fatalf("write error %v, flush error %v; want the backend's", err, ferr)
	}
}

// The read-ahead goroutine hashes every byte in order and ends with the
// reader's error; Close mid-stream ends it (no goroutine left behind).
func TestHashReader(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefghij"), 500_000) // 5 MB
	h := sha256.New()
	hr := newHashReader(bytes.NewReader(data), h)
	got, err := io.ReadAll(hr)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	hr.Close(io.NopCloser(nil))
	want := sha256.Sum256(data)
	if !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("digest differs")
	}

	before := runtime.NumGoroutine()
	for range 20 {
		pr, pw := io.Pipe()
		go func() { _, _ = pw.Write(data[:3*pipeChunk]) }() // then blocks: the stream never ends
		hr := newHashReader(pr, sha256.New())
		buf := make([]byte, 1000)
		if _, err := io.ReadFull(hr, buf); err != nil {
			t.Fatal(err)
		}
		hr.Close(pr) // closing the pipe's reader ends the blocked writer and the read-ahead
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("%d goroutines left after Close (was %d)", n, before)
	}

	hr = newHashReader(io.MultiReader(bytes.NewReader(data[:100]), errReader{}), sha256.New())
	if got, err := io.ReadAll(hr); !errors.Is(err, errBroken) || len(got) != 100 {
		t.Fatalf("read %d bytes, %v; want 100 then the reader's error", len(got), err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

// A producer that hands batches of one size has them written as they
// come: the file's batch size is the producer's (no re-cut), and its
// rows read back in order, by batch and by index.
func TestSinkKeepsProducerBatches(t *testing.T) {
	s := &Store{Backend: NewMemory(), InlineMax: 1024}
	ctx := WithReader(context.Background(), Reader{Execution: coords.ExecutionID})
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil)
	k := s.NewSink(ctx, coords, OffloadOptions{Limit: -1})
	if err := k.Begin(schema, TableMeta{}); err != nil {
		t.Fatal(err)
	}
	const per, batches = 3000, 7
	for b := range batches {
		ib := array.NewInt64Builder(memory.DefaultAllocator)
		for i := range per - (b/(batches-1))*1000 { // the last batch is shorter
			ib.Append(int64(b*per + i))
		}
		a := ib.NewArray()
		rec := array.NewRecordBatch(schema, []arrow.Array{a}, int64(a.Len()))
		if err := k.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		a.Release()
	}
	ref, err := k.End()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.OpenTable(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if v, _ := tr.Schema().Metadata().GetValue(MetaBatchRows); v != "3000" {
		t.Fatalf("batch rows %q, want the producer's 3000", v)
	}
	next := int64(0)
	for {
		rec, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		col := rec.Column(0).(*array.Int64)
		for i := range col.Len() {
			if col.Value(i) != next {
				t.Fatalf("row %d holds %d", next, col.Value(i))
			}
			next++
		}
		rec.Release()
	}
	if next != per*batches-1000 {
		t.Fatalf("%d rows read", next)
	}
	row, err := s.Row(ctx, ref, 3000*4+17)
	if err != nil || row.(map[string]any)["i"] != int64(12017) {
		t.Fatalf("row 12017: %v %v", row, err)
	}
}
