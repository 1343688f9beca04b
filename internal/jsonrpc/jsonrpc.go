// Package jsonrpc is mcpgate's message model: it frames and classifies JSON-RPC 2.0
// messages (one message per line on an MCP stdio transport, MCP 2025-11-25,
// "Transports: stdio"), parses each once into a Message that keeps its raw bytes so a
// relay forwards exactly what it received, and defines Conn, the parsed-message
// interface every transport layer of the gateway implements.
package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/vocab"
)

// DefaultMaxMessageBytes is the default per-message limit: 64 MiB (docs/decisions.md#message-size).
const DefaultMaxMessageBytes = 64 << 20

// ErrTooLarge is returned (as a *TooLargeError) by Reader.ReadLine for a line longer
// than the limit; the line is discarded and the stream stays usable.
var ErrTooLarge = errors.New("jsonrpc: message exceeds the size limit")

// TooLargeError reports an oversized line. Head holds its first bytes (at most
// 64 KiB), enough for PeekID to find an id written early.
type TooLargeError struct {
	Head []byte
	Size int // bytes read before the line ended
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("jsonrpc: message of %d bytes exceeds the size limit", e.Size)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

const tooLargeHead = 64 << 10

// Kind classifies a message.
type Kind uint8

// Message kinds.
const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
	KindBatch
)

// Message is one decoded JSON-RPC message. Raw holds the exact bytes received (no
// trailing newline); the other fields are views for routing. A layer that changes a
// message makes a new one (WithID, WithParams, WithResult) and never edits Raw in
// place, so a message nobody changed is forwarded byte for byte.
type Message struct {
	Raw    []byte
	Kind   Kind
	ID     json.RawMessage // nil when absent; "null" when null
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage
	// Upstream names the configured server a server message came from, or the server
	// a client request or notification is routed to; "" when the gateway fronts a
	// single server that is not named, or before routing.
	Upstream string
	// Related is, for a server request or notification, the id of the client request
	// it was sent in relation to, when the transport tells (a Streamable HTTP server
	// sends it on that request's response stream); nil otherwise. The HTTP front
	// routes by it (docs/http.md#where-server-messages-go).
	Related json.RawMessage
	// Refused is set on the error response the gateway puts in place of a server
	// response it refused whole (docs/decisions.md#one-reading): the reason code, which
	// the answered request's one record carries; "" otherwise.
	Refused vocab.Reason
	// ParamHeaders holds, for a 2026-07-28 tools/call from the HTTP front, its
	// Mcp-Param-* headers (SEP-2243 "Custom Headers"), non-nil even when there are
	// none; nil for a message that came without HTTP headers. On the call the relay
	// sends upstream, the headers built from the arguments that go (a url upstream
	// sends them), whichever front the call came from.
	ParamHeaders map[string][]string
}

// IDKey returns a map key for the message id; equal ids give equal keys.
func (m *Message) IDKey() string { return IDKey(m.ID) }

// IDKey canonicalises a raw id (a JSON string or number) into a map key: numbers
// equal in exact decimal value give equal keys (1, 1.0 and 1e0 are one id, as a
// JSON peer decoding numbers sees them; 9007199254740993 and 9007199254740992 are
// two, though a float64 cannot tell them apart), equal strings give equal keys ("mcpgat\u0065-1" is
// "mcpgate-1", as a peer decoding and re-encoding it answers), and a string never
// equals a number ("1" is not 1).
func IDKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) > 0 && id[0] == '"' {
		var s string
		if bytes.IndexByte(id, '\\') < 0 || json.Unmarshal(id, &s) != nil {
			return string(id)
		}
		return `"` + s + `"`
	}
	if len(id) == 0 || string(id) == "null" {
		return string(id)
	}
	if k, ok := decimalKey(id); ok {
		return k
	}
	return string(id)
}

// decimalKey returns the exact decimal value of a JSON number in one canonical form
// ("70" for 70, 7e1 and 70.0; "1.5" for 15e-1; "5e-1" for 0.5; "0" for any zero): ids are keyed
// by value, not by their float64 rounding, so 9007199254740993 and 9007199254740992
// stay two ids. ok is false for text that is not a JSON number (RFC 8259 §6).
func decimalKey(id []byte) (string, bool) {
	i, neg := 0, false
	if i < len(id) && id[i] == '-' {
		neg, i = true, i+1
	}
	var digits []byte
	exp, start := int64(0), i
	for ; i < len(id) && id[i] >= '0' && id[i] <= '9'; i++ {
		digits = append(digits, id[i])
	}
	if i == start || (id[start] == '0' && i-start > 1) {
		return "", false
	}
	if i < len(id) && id[i] == '.' {
		i++
		fs := i
		for ; i < len(id) && id[i] >= '0' && id[i] <= '9'; i++ {
			digits = append(digits, id[i])
		}
		if i == fs {
			return "", false
		}
		exp -= int64(i - fs)
	}
	if i < len(id) && (id[i] == 'e' || id[i] == 'E') {
		i++
		es := string(id[i:])
		if len(es) > 0 && es[0] == '+' {
			es = es[1:]
		}
		if es == "" || es[0] == '-' && len(es) == 1 || strings.IndexFunc(strings.TrimPrefix(es, "-"), func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
			return "", false
		}
		i = len(id)
		for len(digits) > 0 && digits[0] == '0' {
			digits = digits[1:]
		}
		if len(digits) == 0 {
			return "0", true // zero under any exponent
		}
		e, err := strconv.ParseInt(es, 10, 32)
		if err != nil { // beyond any number a peer decodes: keyed by its exact exponent
			for digits[len(digits)-1] == '0' {
				digits, exp = digits[:len(digits)-1], exp+1
			}
			x, _ := new(big.Int).SetString(es, 10)
			k := string(digits) + "e" + x.Add(x, big.NewInt(exp)).String()
			if neg {
				k = "-" + k
			}
			return k, true
		}
		exp += e
	}
	if i != len(id) {
		return "", false
	}
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return "0", true
	}
	for digits[len(digits)-1] == '0' {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	var k string
	switch n := int64(len(digits)); {
	case exp >= 0 && n+exp <= 40: // an integer, written out: 70
		k = string(digits) + strings.Repeat("0", int(exp))
	case exp < 0 && -exp < n: // a fraction with an integer part, written out: 1.5
		k = string(digits[:n+exp]) + "." + string(digits[n+exp:])
	default:
		k = string(digits) + "e" + strconv.FormatInt(exp, 10)
	}
	if neg {
		k = "-" + k
	}
	return k, true
}

type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// readEnvelope reads the envelope of a valid JSON object in place, as json.Unmarshal
// into an envelope would, with one validating pass and the members as views of b (no
// second pass, no copies). ok is false, and e zero, when it leaves b to json.Unmarshal: invalid
// JSON, not an object, a name escaped, non-ASCII or naming a member only under case
// folding, a member twice, or "jsonrpc" or "method" neither a string nor null.
func readEnvelope(b []byte) (e envelope, ok bool) {
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return e, false
	}
	ok = true
	var seen uint8
	jsonscan.Members(b, func(name, v []byte) {
		v = v[:len(v):len(v)] // a caller appending to a member must not write into Raw
		f := envelopeField(name)
		if f < 0 || f < len(envelopeNames) && seen&(1<<f) != 0 {
			ok = false
			return
		}
		seen |= 1 << f
		switch f {
		case 0, 2: // jsonrpc, method: a string, or null (which leaves them unset)
			if v[0] == 'n' {
				return
			}
			var s string
			if v[0] != '"' {
				ok = false
				return
			} else if in := v[1 : len(v)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
				s = string(in)
			} else if json.Unmarshal(v, &s) != nil {
				ok = false
				return
			}
			if f == 0 {
				e.JSONRPC = s
			} else {
				e.Method = &s
			}
		case 1:
			e.ID = v
		case 3:
			e.Params = v
		case 4:
			e.Result = v
		case 5:
			e.Error = v
		}
	})
	if !ok {
		// Views of b left in e would be appended to in place by json.Unmarshal's
		// RawMessage decoding, rewriting the message it then reads.
		return envelope{}, false
	}
	return e, true
}

// envelopeNames are the envelope's member names, quoted, in readEnvelope's order.
var envelopeNames = [...]string{`"jsonrpc"`, `"id"`, `"method"`, `"params"`, `"result"`, `"error"`}

// envelopeField returns the index in envelopeNames of a quoted member name, 6 for a
// name json.Unmarshal sets no field for, and -1 for one readEnvelope leaves to it.
func envelopeField(name []byte) int {
	for f, n := range envelopeNames {
		if string(name) == n {
			return f
		}
	}
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			return -1
		}
	}
	for _, n := range envelopeNames {
		if bytes.EqualFold(name, []byte(n)) {
			return -1
		}
	}
	return len(envelopeNames)
}

// Parse decodes one line; the Message keeps its own copy of the bytes. It returns a KindBatch message for a JSON array, and an
// error for anything that is not a JSON-RPC 2.0 object.
func Parse(line []byte) (*Message, error) {
	// Copy: a Reader reuses its buffer, and messages outlive the next read.
	line = bytes.Clone(bytes.TrimSpace(line))
	m := &Message{Raw: line}
	if len(line) > 0 && line[0] == '[' {
		if !json.Valid(line) {
			return m, errors.New("jsonrpc: malformed JSON")
		}
		m.Kind = KindBatch
		return m, nil
	}
	e, ok := readEnvelope(line)
	if !ok {
		if err := json.Unmarshal(line, &e); err != nil {
			return m, fmt.Errorf("jsonrpc: malformed message: %w", err)
		}
	}
	if why := checkReading(line); why != "" {
		// Peers would read it differently: refuse it whole (docs/decisions.md#one-reading).
		a := exactReading(line)
		a.Reason = why
		m.Kind, m.ID, m.Method = KindInvalid, a.ID, a.Method
		return m, a
	}
	if e.JSONRPC != "2.0" {
		return m, errors.New(`jsonrpc: "jsonrpc" must be "2.0"`)
	}
	m.ID, m.Params, m.Result, m.Error = e.ID, e.Params, e.Result, e.Error
	switch {
	case e.Method != nil && e.ID != nil:
		m.Method, m.Kind = *e.Method, KindRequest
	case e.Method != nil:
		m.Method, m.Kind = *e.Method, KindNotification
	case e.ID != nil && (e.Result != nil || e.Error != nil):
		m.Kind = KindResponse
	default:
		return m, errors.New("jsonrpc: message is neither a request, a notification nor a response")
	}
	switch {
	case m.Kind == KindRequest && string(bytes.TrimSpace(m.ID)) == "null":
		return m, errors.New("jsonrpc: a request id must be a string or a number, not null")
	case m.Kind != KindNotification && !validID(m.ID):
		return m, errors.New("jsonrpc: id must be a string, a number or null")
	case m.Kind != KindNotification && !ExactID(m.ID):
		// Peers would answer or match it under another id: refuse it whole
		// (docs/decisions.md#exact-ids).
		a := &AmbiguousError{Reason: vocab.ReasonInexactID, Kind: m.Kind, ID: m.ID, Method: m.Method, Answers: m.Result != nil || m.Error != nil}
		m.Kind = KindInvalid
		return m, a
	}
	return m, nil
}

// maxExactID is the largest integer id every peer reads as itself: 2^53−1,
// JavaScript's Number.MAX_SAFE_INTEGER.
const maxExactID = 1<<53 - 1

// ExactID reports whether a raw id (a JSON string, number or null) means the same id
// to every peer: a string of Unicode text, null, or a number whose value is an integer
// from −(2^53−1) to 2^53−1, in any spelling (7e1 and 70.0 are 70). Past that range
// JSON.parse and mcp-go round it to a double (9007199254740993 reads as
// 9007199254740992), and go-sdk truncates a fraction to an integer (1.5 reads as 1),
// so two ids the gateway keys apart would be one id to them; a string with invalid
// UTF-8 or an escaped lone surrogate reads as one U+FFFD, several, or itself,
// depending on the peer (docs/decisions.md#exact-ids).
func ExactID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) >= 2 && id[0] == '"' {
		var r reader
		_, ok := r.decodeName(id[1:len(id)-1], bytes.IndexByte(id, '\\') >= 0)
		return ok
	}
	if len(id) == 0 || string(id) == "null" {
		return true
	}
	k, ok := decimalKey(id)
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(k, 10, 64) // an integer written out in digits; a fraction or exponent form fails
	return err == nil && n >= -maxExactID && n <= maxExactID
}

func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return string(id) == "null"
}

// Reader reads newline-delimited messages of at most Max bytes each.
type Reader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

// NewReader returns a Reader with the given limit (DefaultMaxMessageBytes when ≤ 0).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// ReadLine returns the next non-empty line without its line ending. The slice is
// valid until the next call. It returns ErrTooLarge (after discarding the line) for
// an oversized line, and io.EOF at the end of the stream.
func (r *Reader) ReadLine() ([]byte, error) {
	for {
		r.buf = r.buf[:0]
		tooLarge := false
		var head []byte
		size := 0
		for {
			chunk, err := r.br.ReadSlice('\n')
			size += len(chunk)
			if !tooLarge {
				if len(r.buf)+len(chunk) > r.max+2 { // +2 for a CRLF ending
					tooLarge = true
					head = append(head, r.buf[:min(len(r.buf), tooLargeHead)]...)
					r.buf = r.buf[:0]
				} else {
					r.buf = append(r.buf, chunk...)
				}
			}
			if tooLarge && len(head) < tooLargeHead {
				head = append(head, chunk[:min(len(chunk), tooLargeHead-len(head))]...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				if err == io.EOF && len(r.buf) > 0 && !tooLarge {
					return bytes.TrimRight(r.buf, "\r\n"), nil
				}
				if err == io.EOF && tooLarge {
					return nil, &TooLargeError{Head: head, Size: size}
				}
				return nil, err
			}
			break
		}
		if tooLarge {
			return nil, &TooLargeError{Head: head, Size: size}
		}
		line := bytes.TrimRight(r.buf, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

// Writer writes one message per line; it is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter wraps w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes msg (which must not contain a raw newline) followed by '\n'.
func (w *Writer) Write(msg []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	_, err := w.w.Write(buf)
	return err
}

// Marshal encodes v as compact JSON without HTML escaping, so "<", ">" and "&" in
// relayed text stay as the server sent them.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ErrorObject is a JSON-RPC error object.
type ErrorObject struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Response encodes a result response for id.
func Response(id json.RawMessage, result json.RawMessage) []byte {
	return response(id, "result", result)
}

// response writes {"jsonrpc":"2.0","id":id,key:value} around already-encoded JSON
// (from a parsed line or from Marshal, so one line), without re-encoding a result
// that may be megabytes long. A nil id becomes null.
func response(id json.RawMessage, key string, value json.RawMessage) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b := make([]byte, 0, len(id)+len(key)+len(value)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, bytes.TrimSpace(id)...)
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b = append(b, bytes.TrimSpace(value)...)
	return append(b, '}')
}

// ErrorResponse encodes an error response for id (null when id is nil).
func ErrorResponse(id json.RawMessage, code int, message string) []byte {
	return errorResponseObject(id, ErrorObject{Code: code, Message: message})
}

// errorResponseObject encodes an error response carrying obj.
func errorResponseObject(id json.RawMessage, obj ErrorObject) []byte {
	b, _ := Marshal(obj)
	return ErrorResponseObjectRaw(id, b)
}

// Request encodes a request.
func Request(id json.RawMessage, method string, params any) []byte {
	b, _ := Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params,omitempty"`
	}{"2.0", id, method, params})
	return b
}

// Notification encodes a notification.
func Notification(method string, params any) []byte {
	b, _ := Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", method, params})
	return b
}

// ErrorResponseObjectRaw encodes an error response carrying an already-encoded error object.
func ErrorResponseObjectRaw(id json.RawMessage, obj json.RawMessage) []byte {
	return response(id, "error", obj)
}

// PeekID finds the top-level "id" of a message that does not decode (too deep,
// invalid, or cut short), so the request it answers can still be failed. It scans
// object members without decoding their values and reports false when it cannot
// tell.
func PeekID(line []byte) (json.RawMessage, bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(line, i)
		if i >= len(line) || line[i] != '"' {
			return nil, false
		}
		keyEnd := skipString(line, i)
		if keyEnd < 0 {
			return nil, false
		}
		key := line[i:keyEnd]
		i = skipSpace(line, keyEnd)
		if i >= len(line) || line[i] != ':' {
			return nil, false
		}
		i = skipSpace(line, i+1)
		valEnd := skipValue(line, i)
		if valEnd < 0 {
			return nil, false
		}
		if string(key) == `"id"` || bytes.IndexByte(key, '\\') >= 0 && decodedName(key) == "id" {
			id := line[i:valEnd]
			if validID(id) && json.Valid(id) {
				return bytes.Clone(id), true
			}
			return nil, false
		}
		i = skipSpace(line, valEnd)
		if i >= len(line) || line[i] != ',' {
			return nil, false
		}
		i++
	}
}

// decodedName is the member name key (a JSON string with its quotes) decoded, or "".
func decodedName(key []byte) string {
	var s string
	_ = json.Unmarshal(key, &s)
	return s
}

func skipSpace(b []byte, i int) int { return jsonscan.Space(b, i) }

// skipString returns the index after the string starting at b[i] == '"', or -1.
func skipString(b []byte, i int) int {
	end, _ := jsonscan.String(b, i)
	return end
}

// skipValue returns the index after the JSON value starting at b[i], matching
// brackets without decoding, or -1 when the value does not end (jsonscan.Value).
func skipValue(b []byte, i int) int { return jsonscan.Value(b, i) }
