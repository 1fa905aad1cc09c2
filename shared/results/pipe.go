package results

// Digest and transport beside the codec: an object's bytes are hashed
// (the reference's digests, digest.go) and moved to or from the backend by a
// goroutine of their own, in chunks, while the caller encodes or decodes
// Arrow batches (reads checked by a cheap digest hash in line instead:
// hashBody). On a machine with a spare core a stream costs about the
// slower of the two instead of their sum (scripts/bench results: the
// tier's throughput against raw Arrow IPC). Memory held: at most
// pipeDepth+1 chunks of pipeChunk bytes.

import (
	"errors"
	"io"
	"sync"
)

const (
	// pipeChunk is the size of a chunk handed between the goroutines.
	pipeChunk = 1 << 20
	// pipeDepth is how many chunks may wait for the other side.
	pipeDepth = 4
)

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, pipeChunk); return &b }}

func getChunk() *[]byte { return chunkPool.Get().(*[]byte) }

func putChunk(b *[]byte) {
	*b = (*b)[:0]
	chunkPool.Put(b)
}

// hashWriter writes to w and h from a goroutine of its own: Write copies
// into a chunk and returns; full chunks are hashed and written in order.
// The first error of w is returned by the next Write or by Flush. Not
// safe for concurrent use.
type hashWriter struct {
	w    io.Writer
	h    io.Writer // the digests: never fails
	cur  *[]byte
	ch   chan *[]byte
	done chan struct{}
	mu   sync.Mutex
	err  error
	n    int64 // bytes accepted
	shut bool
}

func newHashWriter(w io.Writer, h io.Writer) *hashWriter {
	hw := &hashWriter{w: w, h: h, ch: make(chan *[]byte, pipeDepth), done: make(chan struct{})}
	go hw.run()
	return hw
}

func (hw *hashWriter) run() {
	defer close(hw.done)
	for c := range hw.ch {
		if hw.failed() == nil {
			hw.h.Write(*c)
			if _, err := hw.w.Write(*c); err != nil {
				hw.mu.Lock()
				hw.err = err
				hw.mu.Unlock()
			}
		}
		putChunk(c)
	}
}

func (hw *hashWriter) failed() error {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return hw.err
}

// Write implements io.Writer.
func (hw *hashWriter) Write(p []byte) (int, error) {
	if hw.shut {
		return 0, errors.New("results: write after the object was finished")
	}
	if err := hw.failed(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		if hw.cur == nil {
			hw.cur = getChunk()
		}
		k := min(len(p), pipeChunk-len(*hw.cur))
		*hw.cur = append(*hw.cur, p[:k]...)
		p = p[k:]
		if len(*hw.cur) == pipeChunk {
			hw.ch <- hw.cur
			hw.cur = nil
		}
	}
	hw.n += int64(n)
	return n, nil
}

// Flush hands the last chunk over, waits until every byte is hashed and
// written, and returns the first error. Nothing may be written after.
func (hw *hashWriter) Flush() error {
	if !hw.shut {
		hw.shut = true
		if hw.cur != nil {
			hw.ch <- hw.cur
			hw.cur = nil
		}
		close(hw.ch)
	}
	<-hw.done
	return hw.failed()
}

// hashReader reads r ahead from a goroutine of its own, hashing every
// byte in order, and serves Read from what it has read. r's error (io.EOF
// at the end) is returned once the bytes before it have been read. Close
// stops the goroutine (it returns after r's current Read does).
type hashReader struct {
	ch   chan chunkOrErr
	stop chan struct{}
	done chan struct{}
	cur  *[]byte
	off  int
	err  error
	once sync.Once
}

type chunkOrErr struct {
	c   *[]byte
	err error
}

func newHashReader(r io.Reader, h io.Writer) *hashReader {
	hr := &hashReader{ch: make(chan chunkOrErr, pipeDepth), stop: make(chan struct{}), done: make(chan struct{})}
	go hr.run(r, h)
	return hr
}

func (hr *hashReader) run(r io.Reader, h io.Writer) {
	defer close(hr.done)
	defer close(hr.ch)
	for {
		c := getChunk()
		n, err := io.ReadFull(r, (*c)[:pipeChunk])
		*c = (*c)[:n]
		h.Write(*c)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		var item chunkOrErr
		if n > 0 {
			item.c = c
		} else {
			putChunk(c)
		}
		if err != nil {
			item.err = err
		}
		select {
		case hr.ch <- item:
		case <-hr.stop:
			if item.c != nil {
				putChunk(item.c)
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// Read implements io.Reader.
func (hr *hashReader) Read(p []byte) (int, error) {
	for hr.cur == nil || hr.off == len(*hr.cur) {
		if hr.cur != nil {
			putChunk(hr.cur)
			hr.cur = nil
		}
		if hr.err != nil {
			return 0, hr.err
		}
		item, ok := <-hr.ch
		if !ok {
			hr.err = io.ErrClosedPipe
			return 0, hr.err
		}
		hr.cur, hr.off, hr.err = item.c, 0, item.err
	}
	n := copy(p, (*hr.cur)[hr.off:])
	hr.off += n
	return n, nil
}

// Close stops reading ahead and waits for the goroutine (after closing
// the underlying reader, which ends a Read it is blocked in).
func (hr *hashReader) Close(underlying io.Closer) error {
	var err error
	hr.once.Do(func() {
		close(hr.stop)
		err = underlying.Close()
		for item := range hr.ch { // unblock a send; drop what was read
			if item.c != nil {
				putChunk(item.c)
			}
		}
		<-hr.done
	})
	return err
}

// hashedBody is an object's body read by a TableReader, every byte hashed
// into its verifier in order (Close stops reading, closing underlying).
type hashedBody interface {
	io.Reader
	Close(underlying io.Closer) error
}

// hashBody reads body for a decoder, hashing every byte into v. A check
// that costs more than the copy it would run beside (the sha256, about
// 1.2 GB/s a core) is done by a goroutine of its own on chunks read
// ahead (hashReader: on two cores the hash and the decoding overlap); a
// cheap one (the crc32c, over 10 GB/s in hardware, or none) is done in
// line on the bytes as they land in the decoder's own buffers (teeBody):
// no chunk in between, so the object's bytes are copied once, as
// arrow-go's own IPC reader copies them (scripts/bench results,
// read_ratio_vs_ipc).
func hashBody(body io.Reader, v *verifier) hashedBody {
	if v.kind == ReadCheckSHA256 {
		return newHashReader(body, v)
	}
	return &teeBody{r: body, h: v}
}

// teeBody hashes what is read from r into h, in the caller's buffer.
type teeBody struct {
	r io.Reader
	h io.Writer
}

// Read implements io.Reader.
func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.h.Write(p[:n])
	}
	return n, err
}

// Close closes underlying (the body; t holds nothing else).
func (t *teeBody) Close(underlying io.Closer) error { return underlying.Close() }
