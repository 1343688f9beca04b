package translate

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// outbox sends to the server in order from one goroutine, so that Recv never blocks
// on the server; in passthrough, once empty, it sends directly.
type outbox struct {
	mu      sync.Mutex
	q       []*jsonrpc.Message
	wake    chan struct{}
	done    chan struct{}
	room    sync.Cond // signalled when q shrinks, or on stop; L is mu
	direct  bool
	stopped bool
	pass    atomic.Bool // the hop passes through: once q is empty, sends go directly
}

// errOutboxFull is send's error past maxOutboxQueue.
var errOutboxFull = errors.New("the server is not reading its input: the gateway's queue for it is full")

// wait blocks while maxQueued messages wait; a client's send calls it before c.mu.
func (o *outbox) wait() {
	o.mu.Lock()
	for len(o.q) >= maxQueued && !o.stopped {
		o.room.L = &o.mu
		o.room.Wait()
	}
	o.mu.Unlock()
}

// send queues ms, all or none (errOutboxFull past maxOutboxQueue).
func (o *outbox) send(c *Conn, ms ...*jsonrpc.Message) error {
	o.mu.Lock()
	if o.direct {
		o.mu.Unlock()
		for _, m := range ms {
			if err := c.up.Send(m); err != nil {
				return err
			}
		}
		return nil
	}
	if o.wake == nil {
		o.wake, o.done = make(chan struct{}, 1), make(chan struct{})
		go o.run(c)
	}
	if len(o.q)+len(ms) > maxOutboxQueue {
		o.mu.Unlock()
		c.opts.Logger.Debug("translation: a message for the server dropped; it reads nothing")
		return errOutboxFull
	}
	o.q = append(o.q, ms...)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

func (o *outbox) run(c *Conn) {
	for {
		o.mu.Lock()
		if len(o.q) == 0 {
			if o.pass.Load() {
				o.direct = true
				o.mu.Unlock()
				return
			}
			o.mu.Unlock()
			select {
			case <-o.wake:
				continue
			case <-o.done:
				return
			}
		}
		m := o.q[0]
		o.q = o.q[1:]
		o.room.Broadcast()
		o.mu.Unlock()
		if err := c.up.Send(m); err != nil {
			c.opts.Logger.Debug("translation: send to the server failed; it is probably exiting", "err", err)
		}
	}
}

func (o *outbox) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	o.room.Broadcast()
	if o.done != nil {
		select {
		case <-o.done:
		default:
			close(o.done)
		}
	}
}
