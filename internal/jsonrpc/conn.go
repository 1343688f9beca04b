package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Conn is one side of an MCP session as parsed messages: every layer between the
// client and a server (relay, restart supervisor, multiplexer, remote client, HTTP
// front) passes *Message values, so a message is parsed once where it enters the
// gateway and its Raw bytes are forwarded unchanged unless a layer rewrites it.
//
// Recv returns the next message. An error for which Transient reports true (a
// *DropError or a *ResetError) leaves the stream usable; any other error ends it.
// Send delivers one message; an error wrapping ErrNotDelivered means only that
// message could not be delivered now (its server is restarting), any other error
// means the connection is gone.
type Conn interface {
	Send(msg *Message) error
	Recv() (*Message, error)
}

// ErrNotDelivered is wrapped by a Send error that concerns only the message sent:
// the session goes on, and a request should be answered with methods.CodeUpstreamUnavailable.
var ErrNotDelivered = errors.New("message not delivered")

// DropError reports a server message that was dropped because it is over the size
// limit or is not valid JSON-RPC. Head holds its first bytes, enough for PeekID to find
// the id of the request it answered, so that request can fail at once.
type DropError struct {
	Head     []byte
	Reason   string // why, phrased to end "the upstream's response was dropped: …"
	Upstream string // the server that sent it ("" with one server)
	// Ambiguous is set when the message was refused because peers could read it
	// differently (docs/decisions.md#one-reading); it says how to answer it.
	Ambiguous *AmbiguousError
}

// NewDropError reports a line Parse refused with err.
func NewDropError(msg *Message, err error) *DropError {
	d := &DropError{Head: msg.Raw, Reason: ReasonMalformed + ": " + err.Error()}
	if errors.As(err, &d.Ambiguous) {
		d.Reason = ReasonAmbiguous + " (" + string(d.Ambiguous.Reason) + ")"
	}
	return d
}

func (e *DropError) Error() string {
	return "jsonrpc: upstream message dropped: " + e.Reason
}

// ResetError reports that the connection behind a stream was lost (its server
// exited, or its remote session expired): requests in flight on it will never be
// answered. The stream goes on; a new connection may follow.
type ResetError struct {
	Upstream string // the server whose connection was lost ("" with one server)
	Err      error
}

func (e *ResetError) Error() string {
	if e.Upstream != "" {
		return fmt.Sprintf("upstream %q connection lost: %v", e.Upstream, e.Err)
	}
	return fmt.Sprintf("upstream connection lost: %v", e.Err)
}

func (e *ResetError) Unwrap() error { return e.Err }

// Transient reports whether a Recv error leaves the stream usable.
func Transient(err error) bool {
	var d *DropError
	var r *ResetError
	return errors.As(err, &d) || errors.As(err, &r)
}

// Drop reasons.
const (
	ReasonTooLarge  = "it exceeds the gateway's message size limit (--max-message-bytes)"
	ReasonMalformed = "it is not valid JSON-RPC"
	ReasonAmbiguous = "it has more than one reading: equal member names, or names equal but for case"
)

// Stream is a Conn over newline-delimited JSON-RPC (MCP stdio framing).
type Stream struct {
	r *Reader
	w *Writer
}

// NewStream reads messages of at most max bytes (DefaultMaxMessageBytes when ≤ 0)
// from r and writes to w.
func NewStream(r io.Reader, w io.Writer, max int) *Stream {
	s := &Stream{}
	if r != nil {
		s.r = NewReader(r, max)
	}
	if w != nil {
		s.w = NewWriter(w)
	}
	return s
}

// Recv reads and parses the next line. An oversized or malformed line is reported as
// a *DropError (the stream goes on); io.EOF ends the stream.
func (s *Stream) Recv() (*Message, error) {
	line, err := s.r.ReadLine()
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		return nil, &DropError{Head: tooLarge.Head, Reason: ReasonTooLarge}
	}
	if err != nil {
		return nil, err
	}
	msg, err := Parse(line)
	if err != nil {
		return msg, NewDropError(msg, err)
	}
	return msg, nil
}

// Send writes msg.Raw as one line.
func (s *Stream) Send(msg *Message) error { return s.w.Write(msg.Raw) }

// NewResponse builds a result response message for id.
func NewResponse(id json.RawMessage, result json.RawMessage) *Message {
	return &Message{Raw: Response(id, result), Kind: KindResponse, ID: orNull(id), Result: result}
}

// NewErrorResponse builds an error response message for id (null when nil).
func NewErrorResponse(id json.RawMessage, code int, message string) *Message {
	obj, _ := Marshal(ErrorObject{Code: code, Message: message})
	return &Message{Raw: ErrorResponseObjectRaw(id, obj), Kind: KindResponse, ID: orNull(id), Error: obj}
}

// NewRequest builds a request message.
func NewRequest(id json.RawMessage, method string, params any) *Message {
	raw := Request(id, method, params)
	m := &Message{Raw: raw, Kind: KindRequest, ID: id, Method: method}
	m.Params = rawParams(params)
	return m
}

// NewNotification builds a notification message.
func NewNotification(method string, params any) *Message {
	m := &Message{Raw: Notification(method, params), Kind: KindNotification, Method: method}
	m.Params = rawParams(params)
	return m
}

func rawParams(params any) json.RawMessage {
	switch p := params.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return p
	}
	b, _ := Marshal(params)
	return b
}

func orNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return json.RawMessage("null")
	}
	return id
}

// WithID returns a copy of m with another id; Raw is re-encoded with every other
// member kept as it was.
func (m *Message) WithID(id json.RawMessage) *Message {
	c := *m
	c.ID = id
	c.Raw = setMember(m.Raw, "id", id)
	return &c
}

// WithParams returns a copy of m with other params; Raw is re-encoded with every
// other member kept as it was.
func (m *Message) WithParams(params json.RawMessage) *Message {
	c := *m
	c.Params = params
	c.Raw = setMember(m.Raw, "params", params)
	return &c
}

// WithResult returns a copy of a response with another result.
func (m *Message) WithResult(result json.RawMessage) *Message {
	c := *m
	c.Result = result
	c.Raw = setMember(m.Raw, "result", result)
	return &c
}

// setMember replaces (or adds) one top-level member of a JSON object.
func setMember(raw []byte, key string, value json.RawMessage) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	obj[key] = value
	b, err := Marshal(obj)
	if err != nil {
		return raw
	}
	return b
}

// RequestError is a Send (or routing) error that answers one request with a JSON-RPC
// error; the session goes on. errors.Is(err, ErrNotDelivered) is true for it.
type RequestError struct {
	Code    int
	Message string
	// Unknown marks a request that names no tool, prompt or resource any server
	// offers: no server was called.
	Unknown bool
}

func (e *RequestError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotDelivered) true.
func (e *RequestError) Is(target error) bool { return target == ErrNotDelivered }

// ResponseErrorMessage is the error response (-32603, methods.CodeInternalError; this
// package sits below the table) for an upstream message that could not be relayed,
// so the request it answers fails at once instead of timing out.
func ResponseErrorMessage(id json.RawMessage, why string) *Message {
	return NewErrorResponse(id, -32603, "mcpgate: the upstream's response was dropped: "+why)
}
