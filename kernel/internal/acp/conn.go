package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// MaxLine is the longest message Kule reads from an agent (a whole file's
// content can travel in one line).
const MaxLine = 64 << 20

// Handler answers what the peer sends. HandleRequest runs on a goroutine of
// its own for each request, so it may block (a permission question, a
// terminal's exit); HandleNotification runs on the reading goroutine, in the
// order the notifications came, and must not block on the connection.
type Handler interface {
	HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, *RPCError)
	HandleNotification(method string, params json.RawMessage)
	// HandleBadLine is told of a line that is not a JSON-RPC message (an
	// agent that prints to stdout); it is kept, never fatal.
	HandleBadLine(line []byte, err error)
}

// Conn is one JSON-RPC 2.0 connection over newline-delimited JSON. Its own
// requests are numbered from 0 in its own id space; ids the peer chooses for
// its requests are a separate space and are only ever echoed back.
type Conn struct {
	w   io.Writer
	wmu sync.Mutex
	h   Handler

	mu      sync.Mutex
	nextID  int64
	pending map[string]chan Message
	err     error // why the connection ended; nil while open
	done    chan struct{}

	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc
	reqs   sync.WaitGroup
}

// NewConn starts reading r. end is called once, with why reading stopped,
// before Done is closed; it may wrap the error (the agent's exit status).
func NewConn(r io.Reader, w io.Writer, h Handler, end func(error) error) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{w: w, h: h, pending: map[string]chan Message{}, done: make(chan struct{}), ctx: ctx, cancel: cancel}
	go c.read(r, end)
	return c
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended, or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Conn) read(r io.Reader, end func(error) error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(br)
		if len(line) > 0 {
			c.dispatch(line)
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = ErrClosed
	}
	if end != nil {
		err = end(err)
	}
	c.cancel()
	c.mu.Lock()
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	close(c.done)
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > MaxLine {
			// Skip the rest of this line; report what we have as bad.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			return nil, fmt.Errorf("acp: a message longer than %d bytes", MaxLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, err
	}
}

func (c *Conn) dispatch(line []byte) {
	m, err := Decode(line)
	if err != nil {
		if len(trimSpace(line)) > 0 {
			c.h.HandleBadLine(line, err)
		}
		return
	}
	switch m.Kind {
	case KindResponse:
		if len(m.ID) == 0 {
			c.h.HandleBadLine(line, fmt.Errorf("%w: error without id", ErrMessage))
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[idKey(m.ID)]
		delete(c.pending, idKey(m.ID))
		c.mu.Unlock()
		if !ok {
			c.h.HandleBadLine(line, fmt.Errorf("%w: answer to no request of ours (id %s)", ErrMessage, m.ID))
			return
		}
		ch <- m
	case KindNotification:
		c.h.HandleNotification(m.Method, m.Params)
	case KindRequest:
		c.reqs.Add(1)
		go func() {
			defer c.reqs.Done()
			res, rerr := c.h.HandleRequest(c.ctx, m.Method, m.Params)
			b, err := encodeResponse(m.ID, res, rerr)
			if err != nil {
				b, _ = encodeResponse(m.ID, nil, &RPCError{Code: CodeInternalError, Message: err.Error()})
			}
			_ = c.write(b)
		}()
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func (c *Conn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("acp: write to agent: %w", err)
	}
	return nil
}

// Send sends a request and returns the channel its answer arrives on; the
// channel is closed without a value when the connection ends first.
func (c *Conn) Send(method string, params any) (<-chan Message, error) {
	c.mu.Lock()
	if c.pending == nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	id := c.nextID
	c.nextID++
	ch := make(chan Message, 1)
	key := idKey(json.RawMessage(fmt.Sprint(id)))
	c.pending[key] = ch
	c.mu.Unlock()
	b, err := encodeRequest(id, method, params)
	if err == nil {
		err = c.write(b)
	}
	if err != nil {
		c.mu.Lock()
		if c.pending != nil {
			delete(c.pending, key)
		}
		c.mu.Unlock()
		// A write that fails because the agent is gone says so.
		select {
		case <-c.done:
			return nil, c.Err()
		case <-time.After(3 * time.Second):
		}
		return nil, err
	}
	return ch, nil
}

// Call sends a request and waits for its answer, decoding the result into
// result (when not nil). A cancelled ctx stops the wait, not the request.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	ch, err := c.Send(method, params)
	if err != nil {
		return err
	}
	select {
	case m, ok := <-ch:
		return c.finish(m, ok, result)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Conn) finish(m Message, ok bool, result any) error {
	if !ok {
		<-c.done
		return c.Err()
	}
	if m.Error != nil {
		return m.Error
	}
	if result != nil && len(m.Result) > 0 && string(m.Result) != "null" {
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("the agent's answer does not decode: %w", err)
		}
	}
	return nil
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	b, err := encodeNotification(method, params)
	if err != nil {
		return err
	}
	return c.write(b)
}
